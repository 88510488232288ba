package env

import (
	"os"
	"path/filepath"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The policy logs writes, and only the writes tests count.
func TestAuditPolicy(t *testing.T) {
	p, err := policy.LoadPolicyFromBytes([]byte(auditPolicy))
	if err != nil {
		t.Fatalf("kube-apiserver would refuse the policy: %v", err)
	}
	eval := policy.NewPolicyRuleEvaluator(p)
	sa := &user.DefaultInfo{Name: "system:serviceaccount:virt-advisor:virt-advisor-apiserver"}
	for _, tc := range []struct {
		name            string
		verb            string
		group, resource string
		path            string
		want            auditinternal.Level
	}{
		{"patch of a HyperConverged", "patch", "hco.kubevirt.io", "hyperconvergeds", "", auditinternal.LevelMetadata},
		{"create of a MachineConfig", "create", "machineconfiguration.openshift.io", "machineconfigs", "", auditinternal.LevelMetadata},
		{"delete of a MachineConfig", "delete", "machineconfiguration.openshift.io", "machineconfigs", "", auditinternal.LevelMetadata},
		{"update of a pool's status", "update", "machineconfiguration.openshift.io", "machineconfigpools", "", auditinternal.LevelMetadata},
		{"get", "get", "hco.kubevirt.io", "hyperconvergeds", "", auditinternal.LevelNone},
		{"watch", "watch", "machineconfiguration.openshift.io", "machineconfigs", "", auditinternal.LevelNone},
		{"Lease renewal", "update", "coordination.k8s.io", "leases", "", auditinternal.LevelNone},
		{"Event", "create", "", "events", "", auditinternal.LevelNone},
		{"SubjectAccessReview", "create", "authorization.k8s.io", "subjectaccessreviews", "", auditinternal.LevelNone},
		{"TokenReview", "create", "authentication.k8s.io", "tokenreviews", "", auditinternal.LevelNone},
		{"readyz", "get", "", "", "/readyz", auditinternal.LevelNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := authorizer.AttributesRecord{User: sa, Verb: tc.verb, APIGroup: tc.group, Resource: tc.resource,
				ResourceRequest: tc.path == "", Path: tc.path}
			if got := eval.EvaluatePolicyRule(attrs).Level; got != tc.want {
				t.Errorf("level %s, want %s", got, tc.want)
			}
		})
	}
}

func TestReadAuditLog(t *testing.T) {
	const write = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/hco.kubevirt.io/v1beta1/namespaces/openshift-cnv/hyperconvergeds/kubevirt-hyperconverged?fieldManager=virt-advisor-operator\u0026force=true","verb":"patch","user":{"username":"system:serviceaccount:virt-advisor:virt-advisor-apiserver"},"objectRef":{"resource":"hyperconvergeds","namespace":"openshift-cnv","name":"kubevirt-hyperconverged","apiGroup":"hco.kubevirt.io"},"responseStatus":{"code":200}}`
	const dryRun = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b","stage":"ResponseComplete","requestURI":"/apis/hco.kubevirt.io/v1beta1/namespaces/openshift-cnv/hyperconvergeds/kubevirt-hyperconverged?dryRun=All\u0026fieldManager=virt-advisor-operator\u0026force=true","verb":"patch","objectRef":{"resource":"hyperconvergeds"},"responseStatus":{"code":200}}`
	for _, tc := range []struct {
		name    string
		content *string // nil: no file
		want    []string
		dryRuns []bool
		wantErr bool
	}{
		{name: "no log yet", content: nil},
		{name: "empty", content: ptr("")},
		{name: "two events", content: ptr(write + "\n" + dryRun + "\n"), want: []string{"a", "b"}, dryRuns: []bool{false, true}},
		{name: "a last line still being written is skipped", content: ptr(write + "\n" + dryRun[:40]), want: []string{"a"}, dryRuns: []bool{false}},
		{name: "blank lines", content: ptr("\n" + write + "\n\n"), want: []string{"a"}, dryRuns: []bool{false}},
		{name: "garbage", content: ptr("not json\n"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), auditLogName)
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			events, next, err := readAuditLog(path, 0)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if err == nil {
				// Reading on from where it stopped finds nothing new.
				more, again, err := readAuditLog(path, next)
				if err != nil || len(more) != 0 || again != next {
					t.Errorf("reading on from %d: %d events, offset %d, error %v; want none, %d, nil", next, len(more), again, err, next)
				}
			}
			if len(events) != len(tc.want) {
				t.Fatalf("%d events, want %d", len(events), len(tc.want))
			}
			for i, ev := range events {
				if string(ev.AuditID) != tc.want[i] {
					t.Errorf("event %d: audit ID %q, want %q", i, ev.AuditID, tc.want[i])
				}
				if IsDryRun(ev) != tc.dryRuns[i] {
					t.Errorf("event %d: dry run %v, want %v", i, IsDryRun(ev), tc.dryRuns[i])
				}
				if ev.Stage != auditv1.StageResponseComplete {
					t.Errorf("event %d: stage %s", i, ev.Stage)
				}
			}
		})
	}
}

// A line that was being written is read once it is complete.
func TestReadAuditLogOnFromAnOffset(t *testing.T) {
	const a = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete"}`
	const b = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"b","stage":"ResponseComplete"}`
	path := filepath.Join(t.TempDir(), auditLogName)
	if err := os.WriteFile(path, []byte(a+"\n"+b[:10]), 0o600); err != nil {
		t.Fatal(err)
	}
	first, next, err := readAuditLog(path, 0)
	if err != nil || len(first) != 1 || next != int64(len(a)+1) {
		t.Fatalf("first read: %d events, offset %d, error %v", len(first), next, err)
	}
	if err := os.WriteFile(path, []byte(a+"\n"+b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	more, end, err := readAuditLog(path, next)
	if err != nil || len(more) != 1 || more[0].AuditID != "b" || end != int64(len(a)+len(b)+2) {
		t.Fatalf("reading on: %+v, offset %d, error %v", more, end, err)
	}
}

func ptr(s string) *string { return &s }
