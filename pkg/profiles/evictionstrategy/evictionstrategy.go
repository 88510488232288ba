// Package evictionstrategy is the vm-eviction-strategy profile: the
// HyperConverged's cluster-wide default evictionStrategy, what a node drain
// does to every VM that sets none of its own.
package evictionstrategy

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name; ItemName its one item; OptionsBlock the JSON
// name of its block of spec.options.
const (
	Name         = "vm-eviction-strategy"
	ItemName     = "configure-eviction-strategy"
	OptionsBlock = "vmEvictionStrategy"
)

type profile struct{}

// New returns the vm-eviction-strategy profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:          Name,
		Category:      "migration",
		Description:   "Sets the cluster-wide default evictionStrategy: what a node drain does to VMs that set none",
		ImpactSummary: "Medium - changes the fate of every VM without its own evictionStrategy in the next drain; no reboot",
		Level:         v1alpha1.ImpactMedium,
		Options:       OptionsBlock,
		Writes: []profiles.Write{{
			Resource:  schema.GroupResource{Group: kubevirt.HyperConvergedGVK.Group, Resource: "hyperconvergeds"},
			Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName,
			Fields: []string{"evictionStrategy"},
			Why:    "the cluster-wide default evictionStrategy of VMs",
		}},
		Reads:    []profiles.Read{{Resource: profiles.VMIsResource, Why: "the running VMs without an evictionStrategy of their own, named in the plan"}},
		Examples: examples(),
		SampleNote: "The cluster-wide default evictionStrategy of VMs, the HyperConverged's\n" +
			"evictionStrategy: what a node drain does to every VM that sets none of\n" +
			"its own. The plan names the running VMs whose fate it changes. No reboot.\n",
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{GVK: kubevirt.HyperConvergedGVK, Description: "Install OpenShift Virtualization via OLM"}}
}

// Items writes the strategy through the HyperConverged version discovery
// prefers, naming the running VMs that follow it.
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	version, err := in.Cluster.PreferredVersion(kubevirt.HyperConvergedGVK.GroupKind())
	if err != nil {
		return nil, err
	}
	if version != kubevirt.HCOVersionV1 && version != kubevirt.HCOVersionV1beta1 {
		return []profiles.Item{{Name: ItemName, Err: kubevirt.HCOVersionError(version)}}, nil
	}
	hco, err := in.Cluster.Get(ctx, kubevirt.HyperConvergedGVK.GroupVersion().WithKind(kubevirt.HyperConvergedGVK.Kind), kubevirt.HCONamespace, kubevirt.HCOName)
	if err != nil {
		return nil, err
	}
	vmis, err := in.Cluster.List(ctx, kubevirt.VirtualMachineInstanceGVK)
	if err != nil {
		return nil, err
	}
	path := kubevirt.HCOFieldPath(version, "evictionStrategy")
	current := ""
	if hco != nil {
		current, _, _ = unstructured.NestedString(hco.Object, path...)
	}
	return []profiles.Item{item(version, in.Options.VMEvictionStrategy.Strategy, current, following(vmis))}, nil
}

// following are the running VMs that set no evictionStrategy of their own
// (namespace/name): the cluster-wide default decides their fate.
func following(vmis []unstructured.Unstructured) []string {
	var out []string
	for _, vmi := range vmis {
		if s, _, _ := unstructured.NestedString(vmi.Object, "spec", "evictionStrategy"); s != "" {
			continue
		}
		out = append(out, vmi.GetNamespace()+"/"+vmi.GetName())
	}
	return out
}

func item(version, strategy, current string, vms []string) profiles.Item {
	path := kubevirt.HCOFieldPath(version, "evictionStrategy")
	desired := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": schema.GroupVersion{Group: kubevirt.HyperConvergedGVK.Group, Version: version}.String(),
		"kind":       kubevirt.HyperConvergedGVK.Kind,
		"metadata":   map[string]interface{}{"name": kubevirt.HCOName, "namespace": kubevirt.HCONamespace},
	}}
	_ = unstructured.SetNestedField(desired.Object, strategy, path...)
	return profiles.Item{
		Name:          ItemName,
		ShowVersion:   true,
		Desired:       desired,
		ManagedFields: []string{strings.Join(path, ".")},
		Impact:        v1alpha1.ImpactMedium,
		Message:       message(strategy, current, vms),
	}
}

// message says which VMs' fate in the next drain changes.
func message(strategy, current string, vms []string) string {
	if current == "" {
		current = "unset"
	}
	msg := fmt.Sprintf("HyperConverged '%s' evictionStrategy will be %s (now %s)", kubevirt.HCOName, strategy, current)
	switch {
	case current == strategy:
		return msg + ": no VM's fate changes"
	case len(vms) == 0:
		return msg + ": no running VM follows it now (every one sets its own)"
	}
	return msg + fmt.Sprintf(": in the next drain, %d running VM(s) without their own evictionStrategy are handled as %s: %s", len(vms), strategy, strings.Join(vms, ", "))
}

// InputObjects: the HyperConverged is the target (its edits are drift);
// the VMs only shape the message.
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return ""
}

// examples are the default and every strategy, with one VM that sets its
// own strategy and one that follows the cluster's.
func examples() []profiles.Example {
	vms := []*unstructured.Unstructured{vmi("vm-a", ""), vmi("vm-b", "None")}
	var out []profiles.Example
	for i, s := range []string{"", "None", "LiveMigrateIfPossible", "External"} {
		name := Name
		if i > 0 {
			name += ", " + s
		}
		out = append(out, profiles.Example{Name: name, Objects: vms,
			Options: v1alpha1.ProfileOptions{VMEvictionStrategy: &v1alpha1.VMEvictionStrategyConfig{Strategy: s}}})
	}
	return out
}

func vmi(name, strategy string) *unstructured.Unstructured {
	spec := map[string]interface{}{}
	if strategy != "" {
		spec["evictionStrategy"] = strategy
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kubevirt.VirtualMachineInstanceGVK.GroupVersion().String(), "kind": kubevirt.VirtualMachineInstanceGVK.Kind,
		"metadata": map[string]interface{}{"namespace": "vms", "name": name},
		"spec":     spec,
		"status":   map[string]interface{}{"phase": "Running"},
	}}
}
