package explain

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestOneLine(t *testing.T) {
	vpc := v1alpha1.Resource("virtplatformconfigs")
	denied := func(verb, resource string) error {
		return apierrors.NewForbidden(vpc, "example-profile", errors.New(
			`User "editor" cannot `+verb+` resource "`+resource+`" in API group "advisor.kubevirt.io" at the cluster scope`))
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"approve denied names the permission and the role", denied("create", "virtplatformconfigs/approve"),
			`user "editor" may not create virtplatformconfigs/approve: ask for the virt-advisor-approver role`},
		{"plan denied", denied("get", "virtplatformconfigs/plan"),
			`user "editor" may not get virtplatformconfigs/plan: ask for the virt-advisor-approver (or virt-advisor-editor) role`},
		{"list denied", denied("list", "virtplatformconfigs"),
			`user "editor" may not list virtplatformconfigs: ask for the virt-advisor-viewer role`},
		{"a forbidden message of another shape is kept", apierrors.NewForbidden(vpc, "x", errors.New("approvals are disabled")),
			`virtplatformconfigs.advisor.kubevirt.io "x" is forbidden: approvals are disabled`},
		{"unknown name", apierrors.NewNotFound(vpc, "nope"),
			`virtplatformconfigs.advisor.kubevirt.io "nope" not found (kubectl advisor status lists the configs)`},
		{"API not served", apierrors.NewGenericServerResponse(404, "get", schema.GroupResource{}, "", "", 0, false),
			"the server could not find the requested resource: is virt-advisor installed? See kubectl get apiservice v1alpha1.advisor.kubevirt.io"},
		{"conflict is the server's message", apierrors.NewConflict(vpc, "example-profile", errors.New("you approved plan 00 but the live plan is now 11: GET the plan again")),
			`Operation cannot be fulfilled on virtplatformconfigs.advisor.kubevirt.io "example-profile": you approved plan 00 but the live plan is now 11: GET the plan again`},
		{"unauthorized", apierrors.NewUnauthorized("bad token"),
			"the server did not accept your credentials: check --kubeconfig, --context, --token"},
		{"several lines become one", errors.New("dial tcp:\n  connection refused"), "dial tcp: connection refused"},
		{"invalid", apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("Approval").GroupKind(), "x", nil), `Approval.advisor.kubevirt.io "x" is invalid`},
		{"wrapped status", errors.Join(&apierrors.StatusError{ErrStatus: metav1.Status{Code: 409, Message: "busy"}}), "busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.err); got != tc.want {
				t.Errorf("Line:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestBrieflyHasNoAdvisorHints(t *testing.T) {
	mcp := schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools"}
	err := apierrors.NewForbidden(mcp, "", errors.New(`User "bob" cannot list resource "machineconfigpools" in API group "machineconfiguration.openshift.io" at the cluster scope`))
	if got, want := Brief(err), `user "bob" may not list machineconfigpools`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err = apierrors.NewGenericServerResponse(404, "list", mcp, "", "", 0, false)
	if got := Brief(err); got != "the server could not find the requested resource (list machineconfigpools.machineconfiguration.openshift.io)" {
		t.Errorf("got %q", got)
	}
}
