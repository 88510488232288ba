// Package higherdensity implements the virt-higher-density profile: kubelet
// swap on the worker nodes (a MachineConfig this project owns) and memory
// overcommit plus KSM on the HyperConverged CR (fields this project patches).
package higherdensity

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name.
const Name = "virt-higher-density"

// Item names.
const (
	SwapItemName = "enable-kubelet-swap"
	HCOItemName  = "configure-higher-density"
)

// Defaults of the options, used only when a caller passes them unresolved
// (the API server resolves them before the profile is called).
const (
	defaultEnableSwap = true
	defaultKSMEnabled = true
)

type profile struct{}

// New returns the virt-higher-density profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:          Name,
		Category:      "density",
		Description:   "Enables higher VM density through swap and other optimizations",
		ImpactSummary: "Enables swap for kubelet to allow memory overcommit and higher VM density. Requires nodes with swap partition labeled CNV_SWAP.",
		Level:         v1alpha1.ImpactHigh,
		Advertised:    true,
		Options:       advisor.OptionsVirtHigherDensity,
		// The checks stay in package validation, with the bound the
		// admission policy pins memoryOvercommitPercentage to.
		ValidateOptions: validation.VirtHigherDensityOptions,
		Writes: []profiles.Write{
			{Resource: schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"}, Name: swapMachineConfigName,
				Create: true, Delete: true, Fields: []string{"config"}, Why: "kubelet swap, worker pool"},
			{Resource: schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"}, Name: ksmZeroPagesMachineConfigName,
				Create: true, Delete: true, Fields: []string{"config"}, Why: "KSM zero pages, worker pool"},
			{Resource: schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"}, Name: thpMadviseMachineConfigName,
				Create: true, Delete: true, Fields: []string{"kernelArguments"}, KernelArguments: profiles.Exactly(thpMadviseKernelArg),
				Why: "THP madvise kernel argument, worker pool"},
			{Resource: schema.GroupResource{Group: kubevirt.HyperConvergedGVK.Group, Resource: "hyperconvergeds"},
				Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName, Fields: []string{"higherWorkloadDensity", "ksmConfiguration"},
				Why: "memory overcommit and KSM"},
		},
		Reads: []profiles.Read{
			{Resource: profiles.PoolsResource, Why: "the pools the swap MachineConfig reaches"},
			{Resource: profiles.NodesResource, Why: "the memory and reported swap of their nodes, for the swap coverage check"},
		},
		Examples: examples(),
		SampleNote: "Higher VM density: swap on the workers (MachineConfig), memory overcommit\n" +
			"and KSM through the HyperConverged CR.\n" +
			"memoryToRequestRatio > 120 requires enableSwap: true.\n" +
			"Optional: ksmConfiguration.useZeroPages (needs KSM enabled) and thpMadvise,\n" +
			"each a MachineConfig of the worker pool (nodes reboot one by one).\n",
	}
}

// examples are the configurations the admission policy's tests write: with
// and without swap and KSM, and the ends of the ratio's range.
func examples() []profiles.Example {
	hd := func(swap, ksm bool) v1alpha1.ProfileOptions {
		c := &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(swap), KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: ptr.To(ksm)}}
		v1alpha1.SetDefaults_VirtHigherDensityConfig(c)
		return v1alpha1.ProfileOptions{VirtHigherDensity: c}
	}
	hdMax := hd(true, true)
	hdMax.VirtHigherDensity.MemoryToRequestRatio = ptr.To(validation.MemoryToRequestRatio.Max)
	hdMax.VirtHigherDensity.KSMConfiguration.NodeLabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"ksm": "on"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "node-role.kubernetes.io/worker", Operator: metav1.LabelSelectorOpExists}}}
	hdMin := hd(false, true)
	hdMin.VirtHigherDensity.MemoryToRequestRatio = ptr.To(validation.MemoryToRequestRatio.Min)
	tuned := hd(true, true)
	tuned.VirtHigherDensity.KSMConfiguration.UseZeroPages = ptr.To(true)
	tuned.VirtHigherDensity.THPMadvise = ptr.To(true)
	return []profiles.Example{
		{Name: Name, Options: hd(true, true)},
		{Name: Name + " with KSM zero pages and THP madvise", Options: tuned},
		{Name: Name + " without swap", Options: hd(false, true)},
		{Name: Name + " without KSM", Options: hd(true, false)},
		{Name: Name + " at the highest ratio, a KSM node selector", Options: hdMax},
		{Name: Name + " at the lowest ratio", Options: hdMin},
	}
}

// Prerequisites needs the MachineConfig API only when swap, KSM zero pages
// or THP madvise is on: otherwise the profile at most deletes MachineConfigs
// it created, and without the MachineConfig API there is nothing to delete.
func (profile) Prerequisites(opts v1alpha1.ProfileOptions) []profiles.Prerequisite {
	var prereqs []profiles.Prerequisite
	if o := resolve(opts.VirtHigherDensity); o.enableSwap || o.ksmZeroPages || o.thpMadvise {
		prereqs = append(prereqs, profiles.Prerequisite{
			GVK:         machineconfig.MachineConfigGVK,
			Description: "MachineConfig CRD is required for swap configuration (available on OpenShift)",
		})
	}
	return append(prereqs, profiles.Prerequisite{
		GVK:         kubevirt.HyperConvergedGVK,
		Description: "Install OpenShift Virtualization via OLM",
	})
}

// Items reads which HyperConverged version is served and, with swap on,
// how much swap the nodes of the pools it reaches report.
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	o := resolve(in.Options.VirtHigherDensity)
	version, err := in.Cluster.PreferredVersion(kubevirt.HyperConvergedGVK.GroupKind())
	if err != nil {
		return nil, err
	}
	hco, err := hcoItem(o, version)
	if err != nil {
		return nil, err
	}
	if o.enableSwap && o.ratio > 100 {
		// A check that cannot run says so; it never blocks the plan.
		hco.Check = func(ctx context.Context) (string, []string) {
			coverage, err := swapCoverage(ctx, in.Cluster, swapMachineConfigLabels(in.ConfigName), o.ratio)
			if err != nil {
				coverage = swapCheckFailed(err)
			}
			return coverage.message, coverage.warnings
		}
	}
	return []profiles.Item{swapItem(in.ConfigName, o.enableSwap), hco,
		ksmZeroPages.planItem(in.ConfigName, o.ksmZeroPages), thpMadvise.planItem(in.ConfigName, o.thpMadvise)}, nil
}

// options are the virt-higher-density options with every default resolved.
type options struct {
	enableSwap  bool
	ratio       int32
	ksmEnabled  bool
	ksmSelector *metav1.LabelSelector // nil: all nodes
	// ksmZeroPages and thpMadvise are off unless asked for: existing
	// configurations plan what they did.
	ksmZeroPages bool
	thpMadvise   bool
}

func resolve(c *v1alpha1.VirtHigherDensityConfig) options {
	o := options{enableSwap: defaultEnableSwap, ratio: v1alpha1.DefaultMemoryToRequestRatioWithSwap, ksmEnabled: defaultKSMEnabled}
	if c == nil {
		return o
	}
	if c.EnableSwap != nil {
		o.enableSwap = *c.EnableSwap
	}
	if !o.enableSwap {
		o.ratio = v1alpha1.DefaultMemoryToRequestRatioWithoutSwap
	}
	if c.MemoryToRequestRatio != nil {
		o.ratio = *c.MemoryToRequestRatio
	}
	if k := c.KSMConfiguration; k != nil {
		if k.Enabled != nil {
			o.ksmEnabled = *k.Enabled
		}
		o.ksmSelector = k.NodeLabelSelector
		// Validation refuses zero pages without KSM; never write them then.
		o.ksmZeroPages = k.UseZeroPages != nil && *k.UseZeroPages && o.ksmEnabled
	}
	o.thpMadvise = c.THPMadvise != nil && *c.THPMadvise
	return o
}

// swapItem is the swap MachineConfig, or, with swap off, the request to
// delete the one this project created (the engine deletes it only if it
// exists and carries our ManagedByLabel).
func swapItem(configName string, enableSwap bool) profiles.Item {
	labels := map[string]interface{}{}
	for k, v := range swapMachineConfigLabels(configName) {
		labels[k] = v
	}
	mc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
		"kind":       machineconfig.MachineConfigGVK.Kind,
		"metadata": map[string]interface{}{
			"name":   swapMachineConfigName,
			"labels": labels,
		},
	}}
	if !enableSwap {
		return profiles.Item{
			Name:    SwapItemName,
			Desired: mc,
			Impact:  v1alpha1.ImpactHigh,
			Message: fmt.Sprintf("MachineConfig '%s' will be removed: swap is disabled", swapMachineConfigName),
			Owned:   true,
			Absent:  true,
		}
	}
	mc.Object["spec"] = map[string]interface{}{"config": swapIgnitionConfig()}
	return profiles.Item{
		Name:          SwapItemName,
		Desired:       mc,
		ManagedFields: []string{"spec.config"},
		Impact:        v1alpha1.ImpactHigh,
		Message:       fmt.Sprintf("MachineConfig '%s' will be configured to enable kubelet swap", swapMachineConfigName),
		Owned:         true,
	}
}

// swapMachineConfigLabels are the labels of the swap MachineConfig: the
// pools that select them are the pools whose nodes get swap.
func swapMachineConfigLabels(configName string) map[string]string {
	return map[string]string{
		machineconfig.RoleLabel: machineconfig.WorkerPool,
		profiles.ManagedByLabel: configName,
	}
}

// swapIgnitionConfig is spec.config of the swap MachineConfig, built afresh
// on every call so that callers may modify it.
func swapIgnitionConfig() map[string]interface{} {
	return map[string]interface{}{
		"ignition": map[string]interface{}{"version": ignitionVersion},
		"storage": map[string]interface{}{
			"files": []interface{}{
				ignitionFile(findSwapPartitionPath, findSwapPartitionMode, findSwapPartitionScript),
				ignitionFile(kubeletSwapConfPath, kubeletSwapConfMode, kubeletSwapConf),
			},
		},
		"systemd": map[string]interface{}{
			"units": []interface{}{
				systemdUnit(swapProvisionUnitName, swapProvisionUnit),
				systemdUnit(cgroupSliceUnitName, cgroupSliceUnit),
			},
		},
	}
}

func ignitionFile(path string, mode int64, content string) map[string]interface{} {
	return map[string]interface{}{
		"contents": map[string]interface{}{
			"source": dataURLPrefix + base64.StdEncoding.EncodeToString([]byte(content)),
		},
		"mode":      mode,
		"overwrite": true,
		"path":      path,
	}
}

func systemdUnit(name, contents string) map[string]interface{} {
	return map[string]interface{}{
		"contents": contents,
		"enabled":  true,
		"name":     name,
	}
}

// hcoItem patches memory overcommit and KSM on the HyperConverged CR. With
// KSM off, ksmConfiguration is left out of the desired state: server-side
// apply then withdraws our ownership of it; the HCO itself is never deleted.
func hcoItem(o options, version string) (profiles.Item, error) {
	if version != kubevirt.HCOVersionV1 && version != kubevirt.HCOVersionV1beta1 {
		return profiles.Item{}, kubevirt.HCOVersionError(version)
	}
	// v1beta1 has the fields in spec, v1 in spec.virtualization.
	fields := map[string]interface{}{
		"higherWorkloadDensity": map[string]interface{}{
			"memoryOvercommitPercentage": int64(o.ratio),
		},
	}
	path := func(f ...string) string { return strings.Join(kubevirt.HCOFieldPath(version, f...), ".") }
	managed := []string{path("higherWorkloadDensity", "memoryOvercommitPercentage")}
	gv := schema.GroupVersion{Group: kubevirt.HyperConvergedGVK.Group, Version: version}
	msg := fmt.Sprintf("HyperConverged '%s' (%s) will be configured with memoryOvercommitPercentage=%d", kubevirt.HCOName, gv, o.ratio)
	if o.ksmEnabled {
		selector := map[string]interface{}{} // {} selects all nodes
		if o.ksmSelector != nil {
			var err error
			selector, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.ksmSelector)
			if err != nil {
				return profiles.Item{}, fmt.Errorf("converting ksmConfiguration.nodeLabelSelector: %w", err)
			}
		}
		fields["ksmConfiguration"] = map[string]interface{}{"nodeLabelSelector": selector}
		managed = append(managed, path("ksmConfiguration"))
		msg += " and KSM enabled"
	}
	spec := fields
	if version == kubevirt.HCOVersionV1 {
		spec = map[string]interface{}{"virtualization": fields}
	}
	return profiles.Item{
		Name:        HCOItemName,
		ShowVersion: true,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": gv.String(),
			"kind":       kubevirt.HyperConvergedGVK.Kind,
			"metadata": map[string]interface{}{
				"name":      kubevirt.HCOName,
				"namespace": kubevirt.HCONamespace,
			},
			"spec": spec,
		}},
		ManagedFields: managed,
		Impact:        v1alpha1.ImpactMedium,
		Message:       msg,
	}, nil
}

// InputObjects: nothing is derived from the cluster; the HyperConverged CR
// is a target, so a change of its managed fields is drift of that item.
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return ""
}

// Writes is the range of memoryOvercommitPercentage the profile writes on
// the HyperConverged: that of options.virtHigherDensity.memoryToRequestRatio,
// its defaults included (TestWritesHoldTheDefaults). The admission policy
// of artifacts/deploy does not bound it: a revert writes back an
// administrator's earlier value, whatever it was (docs/security.md).
func Writes() validation.Range { return validation.MemoryToRequestRatio }
