package higherdensity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// The two kernel tunings virt-higher-density offers as options, each a
// MachineConfig of the worker pool, as openshift-virtualization/
// virt-platform-autopilot ships them (assets/active/metadata.yaml, assets
// ksm-zero-only and thp-tuning under assets/active/machine-config/): a
// oneshot unit for the KSM sysfs knob, and, for THP, the kernel argument.
//
// Upstream's ksm-zero-only runs ksmd itself (redhat_only_zero_pages, run=1)
// and so is only applied while the HyperConverged leaves ksmConfiguration
// unset. Ours only sets use_zero_pages and leaves starting KSM to the
// HyperConverged's ksmConfiguration: it is meaningful only with KSM enabled,
// which validation requires.
const (
	KSMZeroPagesItemName = "enable-ksm-zero-pages"
	THPMadviseItemName   = "enable-thp-madvise"

	ksmZeroPagesMachineConfigName = "90-worker-ksm-zero-pages"
	thpMadviseMachineConfigName   = "90-worker-thp-madvise"

	ksmZeroPagesUnitName = "kubevirt-ksm-zero-pages.service"

	// thpMadviseKernelArg sets the boot-time THP mode (kernel
	// Documentation/admin-guide/mm/transhuge.rst, "Boot parameters"): from
	// the first process on, only madvise(MADV_HUGEPAGE) regions (QEMU's
	// guest memory) get huge pages. A kernel argument rather than a unit
	// writing /sys/kernel/mm/transparent_hugepage/enabled: no process runs
	// with the old mode before the unit, and the MCO tracks kernel
	// arguments in the rendered config, where the plan can read them.
	thpMadviseKernelArg = "transparent_hugepage=madvise"
)

// ksmZeroPagesUnit sets /sys/kernel/mm/ksm/use_zero_pages (kernel
// Documentation/admin-guide/mm/ksm.rst): pages holding only zeroes are
// merged with the kernel's zero page instead of with each other. The knob
// may be changed at any time and acts on pages merged afterwards; the unit
// runs before the kubelet, so before any VM of the node starts.
const ksmZeroPagesUnit = `[Unit]
Description=Merge zero-filled pages with the kernel zero page in KSM (use_zero_pages)
After=sys-kernel-mm-ksm.mount
Before=kubelet-dependencies.target
ConditionPathExists=/sys/kernel/mm/ksm/use_zero_pages

[Service]
Type=oneshot
ExecStart=/bin/sh -c "echo 1 > /sys/kernel/mm/ksm/use_zero_pages"
RemainAfterExit=yes

[Install]
WantedBy=kubelet-dependencies.target
`

// ksmZeroPagesIgnitionConfig is spec.config of the KSM zero-pages
// MachineConfig, built afresh on every call.
func ksmZeroPagesIgnitionConfig() map[string]interface{} {
	return map[string]interface{}{
		"ignition": map[string]interface{}{"version": ignitionVersion},
		"systemd": map[string]interface{}{
			"units": []interface{}{systemdUnit(ksmZeroPagesUnitName, ksmZeroPagesUnit)},
		},
	}
}

// kernelTuning is one optional MachineConfig of the profile.
type kernelTuning struct {
	item, machineConfig, what string
	field                     string // the managed field under spec
	value                     func() interface{}
}

var (
	ksmZeroPages = kernelTuning{item: KSMZeroPagesItemName, machineConfig: ksmZeroPagesMachineConfigName,
		what: "KSM zero pages (use_zero_pages)", field: "config", value: func() interface{} { return ksmZeroPagesIgnitionConfig() }}
	thpMadvise = kernelTuning{item: THPMadviseItemName, machineConfig: thpMadviseMachineConfigName,
		what: "transparent huge pages madvise", field: "kernelArguments", value: func() interface{} { return []interface{}{thpMadviseKernelArg} }}
)

// planItem is the tuning's MachineConfig, or, when off, the request to delete
// the one this project created (nothing is planned when there is none).
// Either way the worker pool rolls out: its nodes are drained and
// rebooted one at a time.
func (k kernelTuning) planItem(configName string, on bool) profiles.Item {
	labels := map[string]interface{}{}
	for key, v := range swapMachineConfigLabels(configName) {
		labels[key] = v
	}
	mc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
		"kind":       machineconfig.MachineConfigGVK.Kind,
		"metadata":   map[string]interface{}{"name": k.machineConfig, "labels": labels},
	}}
	if !on {
		return profiles.Item{
			Name:    k.item,
			Desired: mc,
			Impact:  v1alpha1.ImpactHigh,
			Message: fmt.Sprintf("MachineConfig '%s' will be removed: %s is disabled (worker nodes reboot one by one)", k.machineConfig, k.what),
			Owned:   true,
			Absent:  true,
		}
	}
	mc.Object["spec"] = map[string]interface{}{k.field: k.value()}
	return profiles.Item{
		Name:          k.item,
		Desired:       mc,
		ManagedFields: []string{"spec." + k.field},
		Impact:        v1alpha1.ImpactHigh,
		Message:       fmt.Sprintf("MachineConfig '%s' will be configured to enable %s on the worker nodes (worker nodes reboot one by one)", k.machineConfig, k.what),
		Owned:         true,
	}
}
