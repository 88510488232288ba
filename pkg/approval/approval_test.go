package approval

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

func approvedConfig(t *testing.T) *v1alpha1.VirtPlatformConfig {
	t.Helper()
	res := &plan.Result{Status: v1alpha1.PlanStatus{PlanHash: "feedface", Items: []v1alpha1.PlanItem{{
		Name:         "configure-example-component",
		TargetRef:    v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "example-config", Namespace: "openshift-cnv"},
		Operation:    v1alpha1.OperationCreate,
		DesiredState: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"example-config","namespace":"openshift-cnv"},"data":{"example-key":"example-value"}}`)},
	}}}}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "example-profile", Generation: 3}}
	if err := Record(&cfg.Status, res, v1alpha1.ApprovalRecord{PlanHash: "feedface", ApprovedBy: "alice", ApprovedAt: metav1.Now(), Generation: 3}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(*v1alpha1.VirtPlatformConfig)
		want   string // "" = may write
	}{
		{"as approved", func(*v1alpha1.VirtPlatformConfig) {}, ""},
		{"states and messages move on as the plan is applied", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Items[0].State, c.Status.Items[0].Message = v1alpha1.ItemStateInProgress, "Applying"
			c.Status.Items[0].Diff = "anything"
		}, ""},
		{"same desired state, other key order and spacing", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Items[0].DesiredState = &runtime.RawExtension{Raw: []byte(`{ "kind":"ConfigMap","apiVersion":"v1","data":{"example-key":"example-value"},"metadata":{"namespace":"openshift-cnv","name":"example-config"}}`)}
		}, ""},
		{"no approval", func(c *v1alpha1.VirtPlatformConfig) { c.Status.Approval = nil }, "no approval"},
		{"an approval without items hash", func(c *v1alpha1.VirtPlatformConfig) { c.Status.Approval.ItemsHash = "" }, "no approval"},
		{"spec changed after the approval", func(c *v1alpha1.VirtPlatformConfig) { c.Generation = 4 }, "the spec changed after plan feedface"},
		{"desired state changed", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Items[0].DesiredState = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"acc-forged","namespace":"default"}}`)}
		}, "are not the items of plan"},
		{"target changed", func(c *v1alpha1.VirtPlatformConfig) { c.Status.Items[0].TargetRef.Namespace = "default" }, "are not the items of plan"},
		{"operation changed", func(c *v1alpha1.VirtPlatformConfig) { c.Status.Items[0].Operation = v1alpha1.OperationDelete }, "are not the items of plan"},
		{"item added", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Items = append(c.Status.Items, c.Status.Items[0])
			c.Status.Items[1].Name = "extra"
		}, "are not the items of plan"},
		{"item removed", func(c *v1alpha1.VirtPlatformConfig) { c.Status.Items = nil }, "are not the items of plan"},
		{"undecodable desired state", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Items[0].DesiredState = &runtime.RawExtension{Raw: []byte(`{`)}
		}, "cannot be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := approvedConfig(t)
			tc.change(cfg)
			err := Check(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRecordHandsOverTheItems(t *testing.T) {
	cfg := approvedConfig(t)
	if cfg.Status.Phase != v1alpha1.PhaseInProgress || cfg.Status.Approval.ItemsHash == "" || len(cfg.Status.Items) != 1 {
		t.Fatalf("status after Approve: %+v", cfg.Status)
	}
	if cfg.Status.Items[0].LastTransitionTime == nil {
		t.Fatal("approved items carry their transition time")
	}
}
