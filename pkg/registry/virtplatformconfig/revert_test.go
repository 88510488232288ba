package virtplatformconfig

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

const revertHash = "3333333333333333333333333333333333333333333333333333333333333333"

// reviewers may get the plan and, when revert, the revert plan.
func reviewers(revert bool, names ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, n := range names {
			if a.GetUser().GetName() == n && a.GetVerb() == "get" && (a.GetSubresource() == "plan" || revert && a.GetSubresource() == "revert") {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func withReplaced(c *v1alpha1.VirtPlatformConfig) {
	c.Status.Replaced = []v1alpha1.ReplacedObject{{TargetRef: v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}, UID: "u", Created: true}}
}

func revertPlan() *plan.Result {
	return livePlan(func(r *plan.Result) {
		r.Status.PlanHash = revertHash
		r.Status.Items[0].Name = "revert-configmap-x"
	})
}

// TestApproveRevert: POST .../approve takes the revert plan's hash like
// any other, and records that the approved plan is a revert.
func TestApproveRevert(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	tests := []struct {
		name        string
		stored      *v1alpha1.VirtPlatformConfig
		hash        string
		mayReview   bool
		revertErr   error
		wantCode    int32
		wantMsg     string
		wantRevert  bool
		wantReverts int
		wantNot     string // a refusal does not say it
	}{
		{name: "the revert plan approved", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: revertHash, mayReview: true,
			wantRevert: true, wantReverts: 1},
		{name: "reverted while ignored: Ignore left in place what it restores", hash: revertHash, mayReview: true,
			stored: versioned(withPhase(v1alpha1.PhaseIgnored), withAction(v1alpha1.PlanActionIgnore), withReplaced), wantRevert: true, wantReverts: 1},
		{name: "the profile's plan approved while a revert is possible", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: liveHash, mayReview: true,
			wantReverts: 1},
		{name: "a revert while an approved plan is written", stored: versioned(withPhase(v1alpha1.PhaseInProgress), withReplaced), hash: revertHash, mayReview: true,
			wantCode: 409, wantMsg: "an approved plan is being written", wantReverts: 1},
		{name: "a caller who may not review the revert cannot approve it", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: revertHash,
			wantCode: 409, wantMsg: "you approved plan " + revertHash},
		{name: "the revert plan cannot be computed: the profile's plan is approved all the same", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: liveHash, mayReview: true,
			revertErr: fmt.Errorf("connection refused"), wantReverts: 1},
		{name: "the revert plan cannot be computed: its approval is told why", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: revertHash, mayReview: true,
			revertErr: fmt.Errorf("connection refused"), wantCode: 503, wantMsg: "connection refused", wantReverts: 1},
		{name: "nothing recorded: no revert plan to approve", stored: versioned(withPhase(v1alpha1.PhaseCompleted)), hash: revertHash, mayReview: true,
			wantCode: 409, wantMsg: "you approved plan " + revertHash},
		{name: "a stale revert hash: the 409 names the live revert hash, and the profile's", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: staleHash, mayReview: true,
			wantCode: 409, wantMsg: "plan " + staleHash + " is not the live revert plan, which is now " + revertHash + ": to revert, GET the revert plan again (kubectl advisor revert " + cfgName + "), review it, and approve its planHash. As the profile's plan: you approved plan " + staleHash + " but the live plan is now " + liveHash, wantReverts: 1},
		{name: "a stale revert hash on an ignored config: the live revert hash, and why the profile's plan cannot be approved", hash: staleHash, mayReview: true,
			stored:   versioned(withPhase(v1alpha1.PhaseIgnored), withAction(v1alpha1.PlanActionIgnore), withReplaced),
			wantCode: 409, wantMsg: "which is now " + revertHash + ": to revert, GET the revert plan again (kubectl advisor revert " + cfgName + "), review it, and approve its planHash. As the profile's plan: spec.action is Ignore", wantReverts: 1},
		{name: "a stale hash from a caller who may not review the revert: the revert hash is not told", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced), hash: staleHash,
			wantCode: 409, wantMsg: "you approved plan " + staleHash + " but the live plan is now " + liveHash, wantNot: revertHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{obj: &advisor.VirtPlatformConfig{}}
			if err := scheme.Convert(tt.stored, store.obj, nil); err != nil {
				t.Fatal(err)
			}
			planner := &fakePlanner{res: livePlan(), revert: revertPlan(), revertErr: tt.revertErr}
			r := &ApproveREST{stored: storedConfigs{getter: store, updater: store, scheme: scheme}, planner: planner, recorder: record.NewFakeRecorder(10),
				authz: reviewers(tt.mayReview, "alice")}
			_, err := r.Create(asUser("alice"), cfgName, approvalOf(tt.hash), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			checkRefusal(t, err, tt.wantCode, tt.wantMsg)
			if err != nil && tt.wantNot != "" && strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("message %q says %q", err.Error(), tt.wantNot)
			}
			if planner.reverts != tt.wantReverts {
				t.Errorf("revert plans computed: %d, want %d", planner.reverts, tt.wantReverts)
			}
			a := store.obj.Status.Approval
			if err != nil {
				if store.writes != 0 || a != nil {
					t.Errorf("an approval was recorded: %+v", a)
				}
				return
			}
			if a == nil || a.Revert != tt.wantRevert || a.PlanHash != tt.hash {
				t.Fatalf("recorded approval %+v, want revert %v of %s", a, tt.wantRevert, tt.hash)
			}
			if tt.wantRevert && store.obj.Status.Items[0].Name != "revert-configmap-x" {
				t.Errorf("items %+v, want the revert plan's", store.obj.Status.Items)
			}
			if store.obj.Status.Phase != advisor.PhaseInProgress {
				t.Errorf("phase %s, want InProgress", store.obj.Status.Phase)
			}
		})
	}
}

// TestRevertSubresource: GET .../revert serves the revert plan, and a 409
// when nothing is recorded to revert.
func TestRevertSubresource(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	for _, tt := range []struct {
		name     string
		stored   *v1alpha1.VirtPlatformConfig
		wantCode int32
		wantMsg  string
	}{
		{name: "recorded writes", stored: versioned(withPhase(v1alpha1.PhaseCompleted), withReplaced)},
		{name: "nothing recorded", stored: versioned(withPhase(v1alpha1.PhaseCompleted)), wantCode: 409, wantMsg: "there is nothing to revert"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{obj: &advisor.VirtPlatformConfig{}}
			if err := scheme.Convert(tt.stored, store.obj, nil); err != nil {
				t.Fatal(err)
			}
			planner := &fakePlanner{res: livePlan(), revert: revertPlan()}
			r := &PlanREST{configs: store, planner: planner, scheme: scheme, revert: true}
			out, err := r.Get(asUser("alice"), cfgName, &metav1.GetOptions{})
			checkRefusal(t, err, tt.wantCode, tt.wantMsg)
			if err != nil {
				return
			}
			if p := out.(*advisor.Plan); p.Status.PlanHash != revertHash || planner.computed != 0 {
				t.Errorf("served plan %s (profile plans computed: %d), want the revert plan %s only", p.Status.PlanHash, planner.computed, revertHash)
			}
		})
	}
}
