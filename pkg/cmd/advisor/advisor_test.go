package advisor

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned/fake"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/version"
)

// harness runs the plugin against fake clients.
type harness struct {
	advisor  *fake.Clientset
	dynamic  *dynamicfake.FakeDynamicClient
	out, err bytes.Buffer
}

func newHarness(t *testing.T, dynObjects ...runtime.Object) *harness {
	t.Helper()
	// NewSimpleClientset: the tracker of NewClientset needs the OpenAPI
	// schema of our types for field management, which these tests do not use.
	h := &harness{advisor: fake.NewSimpleClientset()}
	h.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{machineconfig.MachineConfigPools: "MachineConfigPoolList", machineconfig.MachineConfigs: "MachineConfigList"}, dynObjects...)
	return h
}

// run executes the plugin with stdin and returns its exit code.
func (h *harness) run(t *testing.T, stdin string, args ...string) int {
	t.Helper()
	h.out.Reset()
	h.err.Reset()
	o := &options{
		streams:    genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &h.out, ErrOut: &h.err},
		newClients: func() (*clients, error) { return &clients{advisor: h.advisor, dynamic: h.dynamic}, nil },
	}
	return execute(context.Background(), newRootCmd(o), args, &h.err)
}

// servePlan makes GET .../plan return p, or err.
func (h *harness) servePlan(p *v1alpha1.Plan, err error) {
	h.advisor.PrependReactor("get", "virtplatformconfigs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "plan" {
			return false, nil, nil
		}
		return true, p, err
	})
}

// approvals records POST .../approve and answers with err, or a 201.
func (h *harness) approvals(err error) *[]clienttesting.CreateActionImpl {
	var got []clienttesting.CreateActionImpl
	h.advisor.PrependReactor("create", "virtplatformconfigs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approve" {
			return false, nil, nil
		}
		c := a.(clienttesting.CreateActionImpl)
		got = append(got, c)
		if err != nil {
			return true, nil, err
		}
		in := c.GetObject().(*v1alpha1.Approval)
		at := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
		return true, &v1alpha1.Approval{ObjectMeta: in.ObjectMeta, Spec: in.Spec,
			Status: v1alpha1.ApprovalStatus{ApprovedBy: "alice", ApprovedAt: &at, PlanHash: in.Spec.PlanHash}}, nil
	})
	return &got
}

// configMapPlan is a plan of one ConfigMap item with the given operation.
func configMapPlan(op v1alpha1.Operation) *v1alpha1.Plan {
	diff := "--- example-config (ConfigMap)\n+++ example-config (ConfigMap)\n(no changes)\n"
	if op != v1alpha1.OperationNone {
		diff = "--- /dev/null\n+++ example-config (ConfigMap)\n@@ -0,0 +1,2 @@\n+data:\n+  example-key: example-value\n"
	}
	return &v1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Name: "example-profile"},
		Status: v1alpha1.PlanStatus{Profile: "example-profile", Generation: 2, PlanHash: strings.Repeat("ab", 32), ImpactSeverity: v1alpha1.ImpactLow,
			Items: []v1alpha1.PlanItem{{
				Name: "configure-example-component", Operation: op, ImpactSeverity: v1alpha1.ImpactLow,
				TargetRef: v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "example-config", Namespace: "openshift-cnv"},
				Message:   "ConfigMap 'example-config' will be configured", Diff: diff,
			}}},
	}
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

// TestVerbosityFlag: -v and --v are the log verbosity, as kubectl users
// expect (-v=6 logs every request), not --version.
// The summary of --help has a line for every command.
func TestHelpSummarisesEveryCommand(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "", "--help"); code != 0 {
		t.Fatalf("--help: exit %d, %s", code, h.err.String())
	}
	help := h.out.String()
	for _, c := range newRootCmd(&options{}).Commands() {
		if !strings.Contains(help, "\n  kubectl advisor "+c.Use+" ") {
			t.Errorf("--help has no summary line of %q:\n%s", c.Use, help)
		}
	}
}

func TestVerbosityFlag(t *testing.T) {
	defer func() {
		var l klog.Level
		_ = l.Set("0")
	}()
	for _, tc := range []struct {
		args      []string
		code      int
		stdout    string
		stderr    string
		verbosity klog.Level
	}{
		{args: []string{"--version"}, code: exitOK, stdout: "kubectl advisor version " + version.Version + "\n"},
		{args: []string{"-v"}, code: exitError, stderr: "Error: flag needs an argument: 'v' in -v\n"},
		{args: []string{"-v=6", "--version"}, code: exitOK, stdout: "kubectl advisor version " + version.Version + "\n", verbosity: 6},
		{args: []string{"--v=4", "--version"}, code: exitOK, stdout: "kubectl advisor version " + version.Version + "\n", verbosity: 4},
		{args: []string{"-v", "2", "--version"}, code: exitOK, stdout: "kubectl advisor version " + version.Version + "\n", verbosity: 2},
		{args: []string{"-v=loud"}, code: exitError, stderr: `Error: invalid argument "loud" for "-v, --v" flag: strconv.ParseInt: parsing "loud": invalid syntax` + "\n"},
	} {
		h := newHarness(t)
		if code := h.run(t, "", tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.code, h.err.String())
		}
		if h.out.String() != tc.stdout || h.err.String() != tc.stderr {
			t.Errorf("%v:\nstdout %q, want %q\nstderr %q, want %q", tc.args, h.out.String(), tc.stdout, h.err.String(), tc.stderr)
		}
		if tc.code == exitOK && !klog.V(tc.verbosity).Enabled() || klog.V(tc.verbosity+1).Enabled() {
			t.Errorf("%v: the verbosity is not %d", tc.args, tc.verbosity)
		}
		var l klog.Level
		_ = l.Set("0")
	}
}
