// Package explain turns API errors into the one line the plugin's commands
// and its dashboard show a user: the server's message, plus what to do
// about it where we know (the missing permission and the role granting it).
package explain

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// forbiddenUser picks the user and permission out of the authorizer's
// standard message: User "alice" cannot create resource "virtplatformconfigs/approve" in API group ...
var forbiddenUser = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]+)"`)

// roleFor names the shipped ClusterRole that grants a permission.
var roleFor = map[string]string{
	"create virtplatformconfigs/approve": "virt-advisor-approver",
	"create virtplatformconfigs/abort":   "virt-advisor-approver",
	"get virtplatformconfigs/plan":       "virt-advisor-approver (or virt-advisor-editor)",
	"get virtplatformconfigs/revert":     "virt-advisor-approver (or virt-advisor-editor)",
	"get virtplatformconfigs":            "virt-advisor-viewer",
	"list virtplatformconfigs":           "virt-advisor-viewer",
	"watch virtplatformconfigs":          "virt-advisor-viewer",
}

// RoleFor names the shipped ClusterRole that grants permission (e.g.
// "create virtplatformconfigs/approve"), "" when none does.
func RoleFor(permission string) string { return roleFor[permission] }

// Line turns an error into a single line: the server's message, plus what
// to do about it where we know.
func Line(err error) string {
	msg := Flatten(err.Error())
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
			return Flatten(st.Message) + ": is virt-advisor installed? See kubectl get apiservice v1alpha1.advisor.kubevirt.io"
		}
		return Flatten(st.Message) + " (kubectl advisor status lists the configs)"
	case http.StatusUnauthorized:
		return "the server did not accept your credentials: check --kubeconfig, --context, --token"
	}
	return Flatten(st.Message)
}

// forbidden rewrites the authorizer's message as `user "alice" may not
// create virtplatformconfigs/approve` and returns the permission; other
// messages are kept as they are.
func forbidden(message string) (line, permission string) {
	m := forbiddenUser.FindStringSubmatch(message)
	if m == nil {
		return Flatten(message), ""
	}
	permission = m[2] + " " + m[3]
	return fmt.Sprintf("user %q may not %s", m[1], permission), permission
}

// Brief is Line for APIs other than ours: no hints about virt-advisor.
func Brief(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusForbidden {
		line, _ := forbidden(status.Status().Message)
		return line
	}
	return Flatten(err.Error())
}

// Flatten keeps an error on one line.
func Flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
