// Package loadaware is the load-aware-rebalancing profile: PSI metrics on
// the worker nodes and the KubeDescheduler's KubeVirt profile, adapted to
// the installed descheduler operator level.
package loadaware

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

const (
	psiKernelArg = "psi=1"

	itemPSI         = "enable-psi-metrics"
	itemPSIMaster   = "enable-psi-metrics-master"
	itemDescheduler = "enable-load-aware-descheduling"
)

// psiTarget is the PSI MachineConfig of one pool.
type psiTarget struct {
	item, machineConfig, pool string
}

var (
	psiWorker = psiTarget{item: itemPSI, machineConfig: "99-worker-psi-karg", pool: machineconfig.WorkerPool}
	// On compact clusters (Scheduler mastersSchedulable) VMs also run on
	// the control-plane nodes, which the master pool configures.
	psiMaster = psiTarget{item: itemPSIMaster, machineConfig: "99-master-psi-karg", pool: machineconfig.MasterPool}
)

type profile struct{}

// New returns the load-aware-rebalancing profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:          advisor.ProfileLoadAwareRebalancing,
		Category:      "scheduling",
		Description:   "Enables load-aware VM rebalancing and PSI metrics for intelligent scheduling",
		ImpactSummary: "Medium - May require node reboots if PSI metrics are enabled",
		Level:         v1alpha1.ImpactHigh,
		Advertised:    true,
		Options:       advisor.OptionsLoadAware,
		// The checks stay in package validation, which the option bounds
		// of the admission policy and the CRD-era messages come from.
		ValidateOptions: validation.LoadAwareOptions,
		Writes: []profiles.Write{
			{Resource: machineConfigs, Name: psiWorker.machineConfig, Create: true, Delete: true, Fields: []string{"kernelArguments"},
				KernelArguments: profiles.Exactly(psiKernelArg), Why: "the PSI kernel argument, worker pool"},
			{Resource: machineConfigs, Name: psiMaster.machineConfig, Create: true, Delete: true, Fields: []string{"kernelArguments"},
				KernelArguments: profiles.Exactly(psiKernelArg), Why: "the PSI kernel argument, master pool of a compact cluster"},
			{Resource: schema.GroupResource{Group: profiles.KubeDeschedulerGVK.Group, Resource: "kubedeschedulers"},
				Namespace: profiles.DeschedulerNamespace, Name: profiles.DeschedulerName,
				Fields: []string{"managementState", "deschedulingIntervalSeconds", "mode", "profiles", "profileCustomizations", "evictionLimits"},
				Why:    "the descheduler's KubeVirt profile, interval, mode and eviction limits"},
		},
		Reads: []profiles.Read{
			{Resource: schema.GroupResource{Group: profiles.SchedulerGVK.Group, Resource: "schedulers"}, Why: "whether control-plane nodes run VMs (mastersSchedulable): PSI on the master pool too"},
			{Resource: profiles.PoolsResource, Why: "the master pool of a compact cluster"},
			{Resource: schema.GroupResource{Group: profiles.CRDGVK.Group, Resource: "customresourcedefinitions"}, Why: "the KubeDescheduler's schema: the profiles and thresholds it offers"},
			{Resource: schema.GroupResource{Group: kubevirt.HyperConvergedGVK.Group, Resource: "hyperconvergeds"}, Why: "the live-migration limits, for the descheduler's eviction limits"},
		},
		Examples: examples(),
		SampleNote: "Load-aware VM rebalancing: configures the KubeDescheduler singleton (the\n" +
			"best KubeVirt profile the installed descheduler offers, eviction limits\n" +
			"derived from the HyperConverged live-migration limits) and, with\n" +
			"enablePSIMetrics, a MachineConfig adding the \"psi=1\" kernel argument to the\n" +
			"worker pool (nodes reboot during that rollout).\n" +
			"DryRun: the server drafts a plan; review it with\n" +
			"  kubectl get virtplatformconfig load-aware-rebalancing --subresource=plan -o yaml\n" +
			"and approve it with samples/approval.json.\n",
	}
}

var machineConfigs = schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"}

// examples are the configurations the admission policy's tests write: the
// defaults, without PSI, and the other ends of the options' ranges and enums.
func examples() []profiles.Example {
	la := func(psi bool) v1alpha1.ProfileOptions {
		return v1alpha1.ProfileOptions{LoadAware: &v1alpha1.LoadAwareConfig{
			DeschedulingIntervalSeconds: ptr.To[int32](60), Mode: "Automatic", EnablePSIMetrics: ptr.To(psi), DevDeviationThresholds: "AsymmetricLow"}}
	}
	laMax := la(true)
	laMax.LoadAware.DeschedulingIntervalSeconds = ptr.To(validation.DeschedulingIntervalSeconds.Max)
	laMax.LoadAware.Mode = "Predictive"
	laMax.LoadAware.DevDeviationThresholds = "High"
	laMax.LoadAware.EvictionLimitTotal, laMax.LoadAware.EvictionLimitNode = ptr.To(validation.EvictionLimitTotal.Max), ptr.To(validation.EvictionLimitNode.Max)
	// The longest cooldowns that fit together (window = 6 x max cooldown).
	laMax.LoadAware.DevMigrationCooldown = validation.MigrationCooldown.Max.String()
	laMax.LoadAware.DevMaxMigrationCooldown = (validation.MigrationHistoryWindow.Max / validation.HistoryWindowPerMaxCooldown).String()
	laMax.LoadAware.DevMigrationHistoryWindow = validation.MigrationHistoryWindow.Max.String()
	laMin := la(true)
	laMin.LoadAware.EvictionLimitTotal, laMin.LoadAware.EvictionLimitNode = ptr.To(validation.EvictionLimitTotal.Min), ptr.To(validation.EvictionLimitNode.Min)
	return []profiles.Example{
		{Name: advisor.ProfileLoadAwareRebalancing, Options: la(true)},
		{Name: advisor.ProfileLoadAwareRebalancing + " without PSI", Options: la(false)},
		{Name: advisor.ProfileLoadAwareRebalancing + ", every option at its maximum", Options: laMax},
		{Name: advisor.ProfileLoadAwareRebalancing + ", eviction limits at their minimum", Options: laMin},
	}
}

func (profile) Prerequisites(opts v1alpha1.ProfileOptions) []profiles.Prerequisite {
	pre := []profiles.Prerequisite{{GVK: profiles.KubeDeschedulerGVK, Description: "Please install the Descheduler Operator via OLM"}}
	if psiEnabled(opts) {
		pre = append(pre, profiles.Prerequisite{GVK: machineconfig.MachineConfigGVK, Description: "MachineConfig CRD is required for PSI metrics (available on OpenShift)"})
	}
	return append(pre, profiles.Prerequisite{GVK: kubevirt.HyperConvergedGVK, Description: "Please install OpenShift Virtualization via OLM"})
}

func psiEnabled(opts v1alpha1.ProfileOptions) bool {
	return opts.LoadAware == nil || opts.LoadAware.EnablePSIMetrics == nil || *opts.LoadAware.EnablePSIMetrics
}

func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	la := in.Options.LoadAware
	if la == nil {
		return nil, fmt.Errorf("options.loadAware not resolved")
	}
	// The items read different inputs: compute them together.
	var psi, psiMasterItem profiles.Item
	var psiErr, masterErr error
	var wg sync.WaitGroup
	wg.Go(func() { psi, psiErr = psiItem(ctx, in.Cluster, psiWorker, psiEnabled(in.Options)) })
	wg.Go(func() {
		var schedulable bool
		if schedulable, masterErr = mastersSchedulable(ctx, in.Cluster); masterErr == nil {
			psiMasterItem, masterErr = psiItem(ctx, in.Cluster, psiMaster, psiEnabled(in.Options) && schedulable)
		}
	})
	desch, err := deschedulerItem(ctx, in.Cluster, la)
	wg.Wait()
	if err := errors.Join(psiErr, masterErr, err); err != nil {
		return nil, err
	}
	return []profiles.Item{psi, psiMasterItem, desch}, nil
}

// mastersSchedulable reads the cluster Scheduler: true when VMs may run on
// control-plane nodes. No Scheduler API or object means they may not.
func mastersSchedulable(ctx context.Context, cluster profiles.Cluster) (bool, error) {
	s, err := cluster.Get(ctx, profiles.SchedulerGVK, "", profiles.SchedulerName)
	if err != nil || s == nil {
		return false, err
	}
	on, _, _ := unstructured.NestedBool(s.Object, "spec", "mastersSchedulable")
	return on, nil
}

// psiItem is the PSI MachineConfig of a pool, or, when not wanted, the
// request to delete the one this project created.
func psiItem(ctx context.Context, cluster profiles.Cluster, t psiTarget, enabled bool) (profiles.Item, error) {
	mc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
		"kind":       machineconfig.MachineConfigGVK.Kind,
		"metadata": map[string]interface{}{
			"name":   t.machineConfig,
			"labels": map[string]interface{}{machineconfig.RoleLabel: t.pool},
		},
		"spec": map[string]interface{}{"kernelArguments": []interface{}{psiKernelArg}},
	}}
	item := profiles.Item{
		Name:          t.item,
		Desired:       mc,
		ManagedFields: []string{"spec.kernelArguments"},
		Impact:        v1alpha1.ImpactHigh,
		Message:       fmt.Sprintf("MachineConfig '%s' will be configured to enable PSI metrics", t.machineConfig),
		Owned:         true,
	}
	if t.pool == machineconfig.MasterPool {
		item.Message += " on the control-plane nodes, which run VMs (Scheduler 'cluster' has mastersSchedulable: true); the 'master' pool reboots control-plane nodes one at a time"
	}
	if !enabled {
		item.Absent = true
		item.ManagedFields = nil
		item.Message = fmt.Sprintf("MachineConfig '%s' will be removed: PSI metrics are disabled (%s nodes reboot one by one)", t.machineConfig, t.pool)
		if t.pool == machineconfig.MasterPool {
			item.Message = fmt.Sprintf("MachineConfig '%s' will be removed: control-plane nodes no longer run VMs or PSI metrics are disabled (control-plane nodes reboot one at a time)", t.machineConfig)
		}
		return item, nil
	}
	effective, err := psiEffective(ctx, cluster, t.pool)
	if err != nil {
		return item, err
	}
	if effective {
		item.Impact = v1alpha1.ImpactLow
		item.Message = fmt.Sprintf("PSI metrics already effective in MachineConfigPool '%s'", t.pool)
	}
	return item, nil
}

// psiEffective reports whether the pool's rendered config already boots
// with psi=1 (the last psi= kernel argument wins).
func psiEffective(ctx context.Context, cluster profiles.Cluster, pool string) (bool, error) {
	mcp, err := cluster.Get(ctx, machineconfig.MachineConfigPoolGVK, "", pool)
	if err != nil || mcp == nil {
		return false, err
	}
	rendered, _, _ := unstructured.NestedString(mcp.Object, "status", "configuration", "name")
	if rendered == "" {
		return false, nil
	}
	if on, ok := renderedPSI.get(rendered); ok {
		return on, nil
	}
	mc, err := cluster.Get(ctx, machineconfig.MachineConfigGVK, "", rendered)
	if err != nil || mc == nil {
		return false, err
	}
	args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	last := ""
	for _, a := range args {
		if strings.HasPrefix(a, "psi=") {
			last = a
		}
	}
	renderedPSI.put(rendered, last == psiKernelArg)
	return last == psiKernelArg, nil
}

// renderedPSI remembers whether a rendered MachineConfig enables PSI. The
// MCO names rendered configs after a hash of their content, so a name
// always means the same content: no need to read it on every plan.
var renderedPSI = &boundedCache{entries: map[string]bool{}}

type boundedCache struct {
	mu      sync.Mutex
	entries map[string]bool
}

func (c *boundedCache) get(name string) (bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[name]
	return v, ok
}

func (c *boundedCache) put(name string, v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= 256 { // a pool renders a handful per upgrade
		c.entries = map[string]bool{}
	}
	c.entries[name] = v
}

// InputObjects: the HyperConverged CR when eviction limits are derived from
// it, the worker and master pools whose rendered configs tell whether PSI
// is on, and the Scheduler that says whether VMs run on the masters.
// The KubeDescheduler is an input too (the profiles it keeps), marked a
// target: a stale copy would drop the profiles we keep, so it is planned
// only from its live content.
func (profile) InputObjects(opts v1alpha1.ProfileOptions) []profiles.ObjectRef {
	refs := []profiles.ObjectRef{
		{GVK: profiles.KubeDeschedulerGVK, Namespace: profiles.DeschedulerNamespace, Name: profiles.DeschedulerName, Target: true},
		{GVK: machineconfig.MachineConfigPoolGVK, Name: machineconfig.WorkerPool},
		{GVK: machineconfig.MachineConfigPoolGVK, Name: machineconfig.MasterPool},
		{GVK: profiles.SchedulerGVK, Name: profiles.SchedulerName},
	}
	if la := opts.LoadAware; la == nil || la.EvictionLimitTotal == nil || la.EvictionLimitNode == nil {
		refs = append(refs, profiles.ObjectRef{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName})
	}
	return refs
}

// DescribeInputChange names the HCO migration limits behind changed
// eviction limits, with the scaled values, old then new.
func (profile) DescribeInputChange(item string, applied, desired map[string]interface{}) string {
	if item != itemDescheduler {
		return ""
	}
	var changes []string
	for _, l := range []struct{ field, hco string }{
		{"total", "parallelMigrationsPerCluster"}, {"node", "parallelOutboundMigrationsPerNode"},
	} {
		old, _, _ := unstructured.NestedFieldNoCopy(applied, "spec", "evictionLimits", l.field)
		cur, _, _ := unstructured.NestedFieldNoCopy(desired, "spec", "evictionLimits", l.field)
		if old != nil && cur != nil && fmt.Sprint(old) != fmt.Sprint(cur) {
			changes = append(changes, fmt.Sprintf("HCO %s changed (scaled %v -> %v)", l.hco, old, cur))
		}
	}
	return strings.Join(changes, "; ")
}
