package env

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/test/names"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// AdvisorUser is the user name of the server's ServiceAccount in
// Namespace (Env.AdvisorUser: in the namespace it is installed in).
const AdvisorUser = "system:serviceaccount:" + Namespace + ":" + AdvisorServiceAccount

// policyProbe names the objects no profile writes that probe the shipped
// admission policies.
const policyProbe = "virt-advisor-env-policy-probe"

// policyProbes are, by the resource of a policy (group/resource, as its
// first rule names it; "*/*" for the policy that refuses what no other
// one admits), a resource and an object whose dry-run create there that
// policy refuses to the server's ServiceAccount: a name no profile
// writes, or a resource or an operation the server is not allowed.
var policyProbes = map[string]probe{
	"*/*":                             {names.MachineConfigurations, "MachineConfiguration", "", "cluster"},
	"/configmaps":                     {names.ConfigMaps, "ConfigMap", "default", policyProbe},
	"hco.kubevirt.io/hyperconvergeds": {names.HyperConvergedsV1beta1, "HyperConverged", "default", policyProbe},
	"machineconfiguration.openshift.io/kubeletconfigs":     {names.KubeletConfigs, "KubeletConfig", "", policyProbe},
	"machineconfiguration.openshift.io/machineconfigpools": {names.MachineConfigPools, "MachineConfigPool", "", policyProbe},
	"machineconfiguration.openshift.io/machineconfigs":     {names.MachineConfigs, "MachineConfig", "", policyProbe},
	// Its schema takes only "cluster".
	"operator.openshift.io/kubedeschedulers": {names.KubeDeschedulers, "KubeDescheduler", "default", "cluster"},
}

type probe struct {
	gvr                   schema.GroupVersionResource
	kind, namespace, name string
}

// object is the probe's object: a MachineConfig for the worker pool, the
// others with an empty spec (their schemas ask for one; a ConfigMap has
// none).
func (p probe) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	switch p.kind {
	case "ConfigMap":
		delete(u.Object, "spec")
	case "MachineConfig":
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
	}
	u.SetAPIVersion(p.gvr.GroupVersion().String())
	u.SetKind(p.kind)
	u.SetNamespace(p.namespace)
	u.SetName(p.name)
	return u
}

// waitAdmissionPolicies waits until kube-apiserver enforces the
// ValidatingAdmissionPolicies of artifacts/deploy on the server's
// requests: policies are loaded from an informer, a moment after they are
// applied, and the server must run confined from its first request. Each
// policy's probe (policyProbes) is a dry-run create as the ServiceAccount
// (by impersonation, with the group system:masters so that RBAC, which
// does not let it create most of them, lets the request reach
// admission), which that policy refuses.
func (e *Env) waitAdmissionPolicies(ctx context.Context, deploy []*unstructured.Unstructured) error {
	cfg := rest.CopyConfig(e.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: e.AdvisorUser, Groups: []string{"system:masters"}}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, obj := range deploy {
		if obj.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		policy := obj.GetName()
		p, err := probeOf(obj)
		if err != nil {
			return err
		}
		probe := p.object()
		e.logf("waiting for ValidatingAdmissionPolicy %s to be enforced", policy)
		err = poll(ctx, "ValidatingAdmissionPolicy "+policy+" enforced", 250*time.Millisecond, 30*time.Second, e.apiserver, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(p.gvr).Namespace(p.namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case err == nil:
				return false, fmt.Errorf("a %s no profile writes was admitted", p.kind)
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

// probeOf is the probe of a ValidatingAdmissionPolicy.
func probeOf(policy *unstructured.Unstructured) (probe, error) {
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConstraints", "resourceRules")
	key := "*/*"
	if len(rules) == 1 {
		rule, _ := rules[0].(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		if len(groups) == 1 && len(resources) == 1 {
			key = groups[0] + "/" + resources[0]
		}
	}
	p, ok := policyProbes[key]
	if !ok {
		return probe{}, fmt.Errorf("ValidatingAdmissionPolicy %s: no probe for its resource %q (test/env policyProbes)", policy.GetName(), key)
	}
	return p, nil
}
