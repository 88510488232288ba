package advisor

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestConfirmed(t *testing.T) {
	for in, want := range map[string]bool{
		"y\n": true, "yes\n": true, "Y\n": true, "YES": true, "  yes  \n": true,
		"n\n": false, "no\n": false, "\n": false, "": false, "yep\n": false, "y es\n": false, "\ny\n": false,
	} {
		if got := confirmed(strings.NewReader(in)); got != want {
			t.Errorf("confirmed(%q) = %t, want %t", in, got, want)
		}
	}
}

func TestApproveCommand(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	stale := apierrors.NewConflict(v1alpha1.Resource("virtplatformconfigs"), "example-profile",
		errors.New("you approved plan "+hash+" but the live plan is now cdcd: the targets or the spec changed since you reviewed it. GET the plan again, review it, and approve its planHash"))
	denied := apierrors.NewForbidden(v1alpha1.Resource("virtplatformconfigs"), "example-profile",
		errors.New(`User "editor" cannot create resource "virtplatformconfigs/approve" in API group "advisor.kubevirt.io" at the cluster scope`))
	for _, tc := range []struct {
		name      string
		stdin     string
		flags     []string
		serverErr error
		code      int
		approved  bool   // an approval was sent
		dryRun    bool   // ... with dryRun=All
		stdout    string // the end of stdout
		stderr    string
	}{
		{name: "n approves nothing", stdin: "n\n", code: 1, stdout: "\nApprove plan abababababab? [y/N] Nothing approved.\n"},
		{name: "end of input approves nothing", stdin: "", code: 1, stdout: "[y/N] Nothing approved.\n"},
		{name: "y approves the shown hash", stdin: "y\n", code: 0, approved: true, stdout: "[y/N] Plan abababababab approved by alice at "},
		{name: "yes in capitals", stdin: "YES\n", code: 0, approved: true, stdout: ". Follow it with: kubectl advisor status -w example-profile\n"},
		{name: "--yes does not ask", flags: []string{"--yes"}, code: 0, approved: true, stdout: "1 of 1 items change something.\n\nPlan abababababab approved by alice"},
		{name: "--dry-run asks the server with dryRun=All", stdin: "y\n", flags: []string{"--dry-run"}, code: 0, approved: true, dryRun: true,
			stdout: "Plan abababababab can be approved (dry run: nothing recorded).\n"},
		{name: "a changed plan: the 409, plainly", stdin: "y\n", serverErr: stale, code: 2, approved: true,
			stderr: "Error: Operation cannot be fulfilled on virtplatformconfigs.advisor.kubevirt.io \"example-profile\": you approved plan " + hash +
				" but the live plan is now cdcd: the targets or the spec changed since you reviewed it. GET the plan again, review it, and approve its planHash\n"},
		{name: "no permission: the 403 names it", flags: []string{"--yes"}, serverErr: denied, code: 2, approved: true,
			stderr: "Error: user \"editor\" may not create virtplatformconfigs/approve: ask for the virt-advisor-approver role\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.servePlan(configMapPlan(v1alpha1.OperationCreate), nil)
			sent := h.approvals(tc.serverErr)
			code := h.run(t, tc.stdin, append([]string{"approve", "example-profile"}, tc.flags...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, h.err.String())
			}
			if !strings.HasPrefix(h.out.String(), "Plan abababababab for example-profile") {
				t.Errorf("the plan is not shown first:\n%s", h.out.String())
			}
			if !strings.Contains(h.out.String(), tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, h.out.String())
			}
			if h.err.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", h.err.String(), tc.stderr)
			}
			if !tc.approved {
				if len(*sent) != 0 {
					t.Fatalf("approved although not confirmed: %+v", *sent)
				}
				return
			}
			if len(*sent) != 1 {
				t.Fatalf("%d approvals sent, want 1", len(*sent))
			}
			a := (*sent)[0]
			if got := a.GetObject().(*v1alpha1.Approval); got.Spec.PlanHash != hash || got.Name != "example-profile" {
				t.Errorf("approved %q of %q, want exactly the shown plan %q", got.Spec.PlanHash, got.Name, hash)
			}
			if a.Name != "example-profile" {
				t.Errorf("approve sent to %q", a.Name)
			}
			wantDryRun := []string(nil)
			if tc.dryRun {
				wantDryRun = []string{metav1.DryRunAll}
			}
			if got := a.CreateOptions.DryRun; strings.Join(got, ",") != strings.Join(wantDryRun, ",") {
				t.Errorf("dryRun %v, want %v", got, wantDryRun)
			}
		})
	}
}

func TestApproveShowsPlanErrors(t *testing.T) {
	h := newHarness(t)
	h.servePlan(nil, apierrors.NewNotFound(v1alpha1.Resource("virtplatformconfigs"), "nope"))
	sent := h.approvals(nil)
	if code := h.run(t, "y\n", "approve", "nope"); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if len(*sent) != 0 {
		t.Errorf("approved a plan it could not show")
	}
	if want := "Error: virtplatformconfigs.advisor.kubevirt.io \"nope\" not found (kubectl advisor status lists the configs)\n"; h.err.String() != want {
		t.Errorf("stderr %q", h.err.String())
	}
}
