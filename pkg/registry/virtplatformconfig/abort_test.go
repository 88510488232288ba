package virtplatformconfig

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestAbortRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  *advisor.Abort
		code int32
		want string
	}{
		{"empty body: aborts whatever is approved", &advisor.Abort{}, 0, ""},
		{"a plan hash", &advisor.Abort{Spec: advisor.AbortSpec{PlanHash: strings.Repeat("ab", 32)}}, 0, ""},
		{"another config's name", &advisor.Abort{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, 400, `must equal the VirtPlatformConfig name "cfg"`},
		{"a short hash", &advisor.Abort{Spec: advisor.AbortSpec{PlanHash: "1ca7b923a24b"}}, 422, "spec.planHash"},
		{"upper case", &advisor.Abort{Spec: advisor.AbortSpec{PlanHash: strings.Repeat("AB", 32)}}, 422, "64 lowercase hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := abortRequest("cfg", tc.obj)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var st apierrors.APIStatus
			if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
				t.Fatalf("err %v, want a %d", err, tc.code)
			}
			st = err.(apierrors.APIStatus)
			if st.Status().Code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %d %v, want %d with %q", st.Status().Code, err, tc.code, tc.want)
			}
		})
	}
}

// A config with no approved plan being applied answers 409 and is not
// changed.
func TestAbortConfigConflict(t *testing.T) {
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseCompleted,
			Approval: &v1alpha1.ApprovalRecord{PlanHash: strings.Repeat("a", 64), ApprovedBy: "admin"}}}
	before := cfg.DeepCopy()
	_, err := abortConfig(cfg, "", "bob", metav1.Now())
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "no approved plan is being applied (phase Completed)") {
		t.Fatalf("err %v, want a 409 naming the phase", err)
	}
	if cfg.Status.Phase != before.Status.Phase || cfg.Status.Abort != nil {
		t.Errorf("a refused abort changed the config: %+v", cfg.Status)
	}
}
