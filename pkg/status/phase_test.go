package status

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The API lists the phases (advisor.Phases, which validation accepts); the
// table must have a row for each, in the same order, and no other.
func TestTableIsInStepWithTheAPI(t *testing.T) {
	var api []string
	for _, p := range advisor.Phases() {
		api = append(api, string(p))
	}
	if got, want := strings.Join(PhaseNames(), ","), strings.Join(api, ","); got != want {
		t.Errorf("the table has phases\n  %s\nthe API\n  %s", got, want)
	}
}

func TestSetPhaseKeepsExactlyOnePhaseTrue(t *testing.T) {
	st := &v1alpha1.VirtPlatformConfigStatus{}
	for _, step := range []v1alpha1.ConfigPhase{
		v1alpha1.PhaseIgnored, v1alpha1.PhasePending, v1alpha1.PhaseDrafting, v1alpha1.PhaseReviewRequired,
		v1alpha1.PhaseInProgress, v1alpha1.PhaseCompletedWithErrors, v1alpha1.PhaseCompleted, v1alpha1.PhaseDrifted,
	} {
		SetPhase(st, step, "Reason", "message of "+string(step))
		var trues []string
		for _, c := range st.Conditions {
			if c.Status == metav1.ConditionTrue {
				trues = append(trues, c.Type)
			}
		}
		if len(trues) != 1 || trues[0] != string(step) || st.Phase != step {
			t.Fatalf("after %s: phase %s, True conditions %v", step, st.Phase, trues)
		}
		if PhaseMessage(st) != "message of "+string(step) {
			t.Fatalf("after %s: message %q", step, PhaseMessage(st))
		}
	}
	if len(st.Conditions) != len(phases) {
		t.Fatalf("%d conditions, want one per phase (%d)", len(st.Conditions), len(phases))
	}
}

func TestIgnoredMarksOthersNotApplicable(t *testing.T) {
	st := &v1alpha1.VirtPlatformConfigStatus{}
	SetPhase(st, v1alpha1.PhaseIgnored, "Ignored", MessageIgnored)
	for _, c := range st.Conditions {
		if c.Type != "Ignored" && (c.Reason != "Ignored" || c.Message != "Not applicable - configuration is ignored") {
			t.Errorf("%s: %s %q", c.Type, c.Reason, c.Message)
		}
	}
}

func TestTableHasEveryPhaseOnce(t *testing.T) {
	seen := map[v1alpha1.ConfigPhase]bool{}
	for _, p := range phases {
		if seen[p.Phase] {
			t.Errorf("%s twice", p.Phase)
		}
		seen[p.Phase] = true
		if p.InactiveReason == "" || p.InactiveMessage == "" {
			t.Errorf("%s has no inactive condition", p.Phase)
		}
		if !p.Approvable && p.NotApprovable == "" {
			t.Errorf("%s refuses approvals without saying why", p.Phase)
		}
	}
	if p, ok := Lookup(""); !ok || p.Step != StepDraft {
		t.Errorf("a config without a phase is drafted, got %+v", p)
	}
	if _, ok := Lookup("Sleeping"); ok {
		t.Error("unknown phase found")
	}
	if p, _ := Lookup(v1alpha1.PhaseFailed); !p.Terminal() {
		t.Error("Failed is terminal")
	}
}
