package env

import (
	"context"
	"fmt"
	"strings"
	"time"

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
// one admits), an object whose dry-run create that policy refuses to the
// server's ServiceAccount: a name no profile writes, or a resource or an
// operation the server is not allowed.
var policyProbes = map[string]*unstructured.Unstructured{
	"*/*":                             probeObject("operator.openshift.io/v1", "MachineConfiguration", "", "cluster"),
	"/configmaps":                     probeObject("v1", "ConfigMap", "default", policyProbe),
	"hco.kubevirt.io/hyperconvergeds": probeObject("hco.kubevirt.io/v1beta1", "HyperConverged", "default", policyProbe),
	"machineconfiguration.openshift.io/kubeletconfigs":     probeObject("machineconfiguration.openshift.io/v1", "KubeletConfig", "", policyProbe),
	"machineconfiguration.openshift.io/machineconfigpools": probeObject("machineconfiguration.openshift.io/v1", "MachineConfigPool", "", policyProbe),
	"machineconfiguration.openshift.io/machineconfigs":     probeObject("machineconfiguration.openshift.io/v1", "MachineConfig", "", policyProbe),
	// Its schema takes only "cluster".
	"operator.openshift.io/kubedeschedulers": probeObject("operator.openshift.io/v1", "KubeDescheduler", "default", "cluster"),
}

func probeObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": map[string]any{}}}
	if kind == "ConfigMap" {
		delete(u.Object, "spec")
	}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
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
		probe, gvr, err := probeOf(obj)
		if err != nil {
			return err
		}
		e.logf("waiting for ValidatingAdmissionPolicy %s to be enforced", policy)
		err = poll(ctx, "ValidatingAdmissionPolicy "+policy+" enforced", 250*time.Millisecond, 30*time.Second, e.apiserver, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).Namespace(probe.GetNamespace()).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case err == nil:
				return false, fmt.Errorf("a %s no profile writes was admitted", probe.GetKind())
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

// probeOf is the probe of a ValidatingAdmissionPolicy and its resource.
func probeOf(policy *unstructured.Unstructured) (*unstructured.Unstructured, schema.GroupVersionResource, error) {
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConstraints", "resourceRules")
	key := ""
	if len(rules) > 0 {
		rule, _ := rules[0].(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		if len(groups) == 1 && len(resources) == 1 {
			key = groups[0] + "/" + resources[0]
		} else {
			key = "*/*"
		}
	}
	probe, ok := policyProbes[key]
	if !ok {
		return nil, schema.GroupVersionResource{}, fmt.Errorf("ValidatingAdmissionPolicy %s: no probe for its resource %q (test/env policyProbes)", policy.GetName(), key)
	}
	gv, err := schema.ParseGroupVersion(probe.GetAPIVersion())
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	resource := key[strings.Index(key, "/")+1:]
	if key == "*/*" {
		resource = "machineconfigurations"
	}
	return probe, gv.WithResource(resource), nil
}
