package advisor

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exit codes, as diff(1) uses them: 0 nothing to do, 1 something to do
// (or declined), 2 trouble.
const (
	exitOK      = 0
	exitChanges = 1
	exitError   = 2
)

// exitCodeError ends the command with a code other than exitError, after
// the command has said why on stdout.
type exitCodeError struct {
	code int
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// forbiddenUser picks the user and permission out of the authorizer's
// standard message: User "alice" cannot create resource "virtplatformconfigs/approve" in API group ...
var forbiddenUser = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]+)"`)

// roleFor names the shipped ClusterRole that grants a permission.
var roleFor = map[string]string{
	"create virtplatformconfigs/approve": "virt-advisor-approver",
	"get virtplatformconfigs/plan":       "virt-advisor-approver (or virt-advisor-editor)",
	"get virtplatformconfigs":            "virt-advisor-viewer",
	"list virtplatformconfigs":           "virt-advisor-viewer",
	"watch virtplatformconfigs":          "virt-advisor-viewer",
}

// oneLine turns an error into the single line printed after "Error: ":
// the server's message, plus what to do about it where we know.
func oneLine(err error) string {
	msg := flatten(err.Error())
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return msg
	}
	st := status.Status()
	switch st.Code {
	case http.StatusForbidden:
		line, perm := forbidden(st.Message)
		if role, ok := roleFor[perm]; ok {
			line += ": ask for the " + role + " role"
		}
		return line
	case http.StatusNotFound:
		if st.Details == nil || st.Details.Name == "" {
			return flatten(st.Message) + ": is virt-advisor installed? See kubectl get apiservice v1alpha1.advisor.kubevirt.io"
		}
		return flatten(st.Message) + " (kubectl advisor status lists the configs)"
	case http.StatusUnauthorized:
		return "the server did not accept your credentials: check --kubeconfig, --context, --token"
	}
	return flatten(st.Message)
}

// forbidden rewrites the authorizer's message as `user "alice" may not
// create virtplatformconfigs/approve` and returns the permission; other
// messages are kept as they are.
func forbidden(message string) (line, permission string) {
	m := forbiddenUser.FindStringSubmatch(message)
	if m == nil {
		return flatten(message), ""
	}
	permission = m[2] + " " + m[3]
	return fmt.Sprintf("user %q may not %s", m[1], permission), permission
}

// briefly is oneLine for APIs other than ours: no hints about virt-advisor.
func briefly(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusForbidden {
		line, _ := forbidden(status.Status().Message)
		return line
	}
	return flatten(err.Error())
}

// flatten keeps an error on one line.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
