package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/test/names"
)

// AdvisorUser is the user name of the server's ServiceAccount in
// Namespace (Env.AdvisorUser: in the namespace it is installed in).
const AdvisorUser = "system:serviceaccount:" + Namespace + ":" + AdvisorServiceAccount

// policyProbe is a MachineConfig no profile writes: the shipped
// admission policy refuses it to the server's ServiceAccount.
const policyProbe = "virt-advisor-env-policy-probe"

// waitAdmissionPolicies waits until kube-apiserver enforces the
// ValidatingAdmissionPolicies of artifacts/deploy on the server's
// requests: policies are loaded from an informer, a moment after they are
// applied, and the server must run confined from its first request. The
// probe is a dry-run create of a MachineConfig as the ServiceAccount (by
// impersonation), which its RBAC allows and the policy refuses.
func (e *Env) waitAdmissionPolicies(ctx context.Context, deploy []*unstructured.Unstructured) error {
	var policies []string
	for _, obj := range deploy {
		if obj.GetKind() == "ValidatingAdmissionPolicy" {
			policies = append(policies, obj.GetName())
		}
	}
	if len(policies) == 0 {
		return nil
	}
	cfg := rest.CopyConfig(e.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: e.AdvisorUser}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": policyProbe, "labels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
	}}
	for _, policy := range policies {
		e.logf("waiting for ValidatingAdmissionPolicy %s to be enforced", policy)
		err := poll(ctx, "ValidatingAdmissionPolicy "+policy+" enforced", 250*time.Millisecond, 30*time.Second, e.apiserver, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(names.MachineConfigs).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case err == nil:
				return false, errors.New("a MachineConfig no profile writes was admitted")
			case strings.Contains(err.Error(), fmt.Sprintf("ValidatingAdmissionPolicy '%s'", policy)):
				return true, nil
			default:
				return false, err
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
