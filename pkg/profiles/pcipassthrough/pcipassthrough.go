// Package pcipassthrough implements the pci-passthrough profile: the IOMMU
// kernel arguments a pool's nodes need to hand PCI devices to VMs (VFIO),
// chosen by the CPU vendor its nodes share. The nodes reboot one by one as
// the pool rolls the MachineConfig out.
//
// The arguments, per the Linux kernel's
// Documentation/admin-guide/kernel-parameters.txt:
//   - intel_iommu=on enables the Intel IOMMU (VT-d, DMAR) driver, which is
//     off unless the kernel is built with CONFIG_INTEL_IOMMU_DEFAULT_ON:
//     on Intel it is set, not assumed;
//   - amd_iommu needs nothing: the AMD IOMMU (AMD-Vi) driver initialises
//     every IOMMU the firmware reports unless amd_iommu=off (the parameter
//     has no "on" value; its options are off, fullflush, force_isolation…);
//   - iommu=pt puts the devices the host's own drivers use in passthrough
//     (identity-mapped) domains, so only devices assigned to VMs pay the
//     translation: on both vendors.
//
// The upstream template (openshift-virtualization/virt-platform-autopilot,
// its assets: MachineConfig 50-virt-pci-passthrough, role worker) writes
// intel_iommu=on iommu=pt on every cluster, for the worker role only.
// This profile differs: it reads the vendor of the pool's nodes
// (node-feature-discovery's label) and writes iommu=pt alone on AMD, where
// intel_iommu means nothing; it refuses a pool whose nodes differ in
// vendor or whose vendor it cannot read, naming the nodes, rather than
// write Intel arguments onto nodes it knows nothing of; and it writes for
// the pool the options name.
package pcipassthrough

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name; ItemName its one item; OptionsBlock the JSON
// name of its block of spec.options (ProfileOptions.PciPassthrough).
const (
	Name         = "pci-passthrough"
	ItemName     = "configure-iommu"
	OptionsBlock = "pciPassthrough"
)

// NamePrefix and NameSuffix frame the pool's name in the MachineConfig's
// name: 50-<pool>-virt-advisor-pci-passthrough.
const (
	NamePrefix = "50-"
	NameSuffix = "-virt-advisor-pci-passthrough"
)

// MachineConfigName is the MachineConfig of a pool.
func MachineConfigName(pool string) string { return NamePrefix + pool + NameSuffix }

// The CPU vendors (cpuid vendor strings, node-feature-discovery's
// cpu-model.vendor_id) the profile knows.
const (
	Intel = "GenuineIntel"
	AMD   = "AuthenticAMD"
)

// argsByVendor are the kernel arguments of each vendor (see the package
// comment).
var argsByVendor = map[string][]string{
	Intel: {"intel_iommu=on", "iommu=pt"},
	AMD:   {"iommu=pt"},
}

// KernelArguments are every kernel argument the profile writes: the
// admission policy admits no other.
func KernelArguments() []string { return []string{"intel_iommu=on", "iommu=pt"} }

type profile struct{}

// New returns the pci-passthrough profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:            Name,
		Category:        "devices",
		Description:     "Enables the IOMMU for PCI passthrough on the nodes of a MachineConfigPool, by CPU vendor",
		ImpactSummary:   "High - kernel arguments of a MachineConfig: the pool's nodes reboot one by one",
		Level:           v1alpha1.ImpactHigh,
		Advertised:      true,
		Options:         OptionsBlock,
		ValidateOptions: validateOptions,
		Writes: []profiles.Write{{
			Resource: schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"},
			Name:     MachineConfigName(profiles.PoolPlaceholder),
			Create:   true, Delete: true,
			Fields:          []string{"kernelArguments"},
			KernelArguments: profiles.Exactly(KernelArguments()...),
			Why:             "the IOMMU kernel arguments (intel_iommu=on on Intel, iommu=pt) of the chosen pool",
		}},
		Reads: []profiles.Read{
			{Resource: profiles.PoolsResource, Why: "the chosen pool"},
			{Resource: profiles.NodesResource, Why: "the CPU vendor of its nodes"},
		},
		Examples: examples(),
		SampleNote: "The IOMMU for PCI passthrough on the nodes of one MachineConfigPool: a\n" +
			"MachineConfig with intel_iommu=on iommu=pt on Intel nodes, iommu=pt on AMD\n" +
			"nodes (their IOMMU is on by default); a pool of mixed or unknown vendors\n" +
			"(node-feature-discovery's cpu-model.vendor_id label) is refused.\n" +
			"The pool's nodes reboot one by one during the rollout.\n",
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{GVK: machineconfig.MachineConfigGVK, Description: "MachineConfig CRD is required for kernel arguments (available on OpenShift)"}}
}

// Items reads the vendor of the nodes the MachineConfig lands on.
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	pool := machineconfig.WorkerPool
	if o := in.Options.PciPassthrough; o != nil && o.Pool != "" {
		pool = o.Pool
	}
	sel, err := hardware.ReadSelected(ctx, in.Cluster, pool, map[string]string{machineconfig.RoleLabel: pool})
	if err != nil {
		return []profiles.Item{refused(pool, err)}, nil
	}
	vendor, err := poolVendor(sel.Pool)
	if err != nil {
		return []profiles.Item{refused(pool, sel.Explain(err, fmt.Sprintf("MachineConfig '%s' (role '%s')", MachineConfigName(pool), pool)))}, nil
	}
	return []profiles.Item{item(pool, vendor, sel)}, nil
}

// poolVendor is the one vendor of the pool's nodes, which must be known.
func poolVendor(p hardware.Pool) (string, error) {
	if len(p.Nodes) == 0 {
		return "", fmt.Errorf("MachineConfigPool '%s' has no nodes: the IOMMU arguments depend on their CPU vendor", p.Name)
	}
	if err := p.Uniform(hardware.Vendor); err != nil {
		return "", err
	}
	vendor := p.Nodes[0].Vendor
	if _, known := argsByVendor[vendor]; !known {
		names := make([]string, len(p.Nodes))
		for i, n := range p.Nodes {
			names[i] = n.Name
		}
		return "", fmt.Errorf("the nodes of MachineConfigPool '%s' (%s) have CPU vendor %s: the IOMMU arguments are known for %s and %s only; without node-feature-discovery's label %s the vendor is unknown: deploy node-feature-discovery or label the nodes",
			p.Name, strings.Join(names, ", "), vendor, Intel, AMD, hardware.VendorLabel)
	}
	return vendor, nil
}

func item(pool, vendor string, sel hardware.Selected) profiles.Item {
	name := MachineConfigName(pool)
	args := argsByVendor[vendor]
	var list []interface{}
	for _, a := range args {
		list = append(list, a)
	}
	nodes := make([]string, len(sel.Pool.Nodes))
	for i, n := range sel.Pool.Nodes {
		nodes[i] = n.Name
	}
	msg := fmt.Sprintf("MachineConfig '%s' will be configured with kernel arguments %s for MachineConfigPool '%s': its %d node(s) (%s) have CPU vendor %s",
		name, strings.Join(args, " "), pool, len(nodes), strings.Join(nodes, ", "), vendor)
	if vendor == AMD {
		msg += " (the AMD IOMMU is on by default; iommu=pt keeps host devices in passthrough)"
	}
	if len(sel.Others) > 0 {
		msg += fmt.Sprintf("; also rendered into MachineConfigPool(s) %s, whose machineConfigSelector selects role '%s' (their nodes are counted)", strings.Join(sel.Others, ", "), pool)
	}
	return profiles.Item{
		Name: ItemName,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
			"kind":       machineconfig.MachineConfigGVK.Kind,
			"metadata": map[string]interface{}{
				"name":   name,
				"labels": map[string]interface{}{machineconfig.RoleLabel: pool},
			},
			"spec": map[string]interface{}{"kernelArguments": list},
		}},
		ManagedFields: []string{"spec.kernelArguments"},
		Impact:        v1alpha1.ImpactHigh,
		Owned:         true,
		Message:       msg,
	}
}

// InputObjects: the vendor is read from the list of Nodes at every plan (a
// node that joins with another vendor changes the plan: a new review).
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return "the CPU vendor of the pool's nodes changed (a node joined or left)"
}

func validateOptions(opts *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	return validation.ValidatePool(fldPath.Child("pool"), opts.PciPassthrough.Pool, MachineConfigName)
}

// refused is the item that cannot be planned: its MachineConfig's identity
// (the plan names its target) and why.
func refused(pool string, err error) profiles.Item {
	return profiles.Item{Name: ItemName, Err: err, Impact: v1alpha1.ImpactHigh, Desired: &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
		"kind":       machineconfig.MachineConfigGVK.Kind,
		"metadata": map[string]interface{}{
			"name":   MachineConfigName(pool),
			"labels": map[string]interface{}{machineconfig.RoleLabel: pool},
		},
	}}}
}
