package metrics

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The series below are computed from the controller's cache at every
// scrape: a deleted config has no series left, and nothing is counted twice.
var (
	configsDesc = metrics.NewDesc(namespace+"_configs",
		"VirtPlatformConfigs by profile and phase.",
		[]string{"profile", "phase"}, nil, metrics.ALPHA, "")
	configPhaseDesc = metrics.NewDesc(namespace+"_config_phase",
		"The current phase of a VirtPlatformConfig: 1 for the phase it is in; other phases have no series.",
		[]string{"name", "profile", "phase"}, nil, metrics.ALPHA, "")
	configPhaseSinceDesc = metrics.NewDesc(namespace+"_config_phase_since_timestamp_seconds",
		"When a VirtPlatformConfig entered its current phase (the lastTransitionTime of its phase condition), in Unix seconds.",
		[]string{"name", "profile", "phase"}, nil, metrics.ALPHA, "")
	rolloutStartedDesc = metrics.NewDesc(namespace+"_config_rollout_started_timestamp_seconds",
		"When a MachineConfig item of a VirtPlatformConfig in phase InProgress started rolling out, in Unix seconds.",
		[]string{"name", "profile", "item"}, nil, metrics.ALPHA, "")
	writeWaitingDesc = metrics.NewDesc(namespace+"_config_write_waiting_since_timestamp_seconds",
		"When an approved item of a VirtPlatformConfig in phase InProgress became due without being written yet (it waits for its MachineConfigPools: updating, degraded or paused by someone else), in Unix seconds.",
		[]string{"name", "profile", "item"}, nil, metrics.ALPHA, "")
	partiallyAppliedDesc = metrics.NewDesc(namespace+"_config_partially_applied",
		"1 while a VirtPlatformConfig's last approved plan was written only in part (condition PartiallyApplied True): the cluster is partially configured.",
		[]string{"name", "profile"}, nil, metrics.ALPHA, "")
	windowWaitingDesc = metrics.NewDesc(namespace+"_config_window_waiting_since_timestamp_seconds",
		"When an approved MachineConfig item of a VirtPlatformConfig in phase InProgress started waiting for a maintenance window of its pools (before its write, or with its rollout paused), in Unix seconds.",
		[]string{"name", "profile", "item", "window"}, nil, metrics.ALPHA, "")
	windowPausesDesc = metrics.NewDesc(namespace+"_config_rollout_window_pauses",
		"How many times closing maintenance windows paused the rollout of a MachineConfig item of a VirtPlatformConfig in phase InProgress.",
		[]string{"name", "profile", "item"}, nil, metrics.ALPHA, "")
	waitTimeoutDesc = metrics.NewDesc(namespace+"_config_wait_timeout_seconds",
		"spec.waitTimeout of a VirtPlatformConfig, in seconds; no series when unset (wait forever).",
		[]string{"name", "profile"}, nil, metrics.ALPHA, "")
)

// configCollector reads the VirtPlatformConfigs of the controller's
// informer. Only the leader runs the controller: a standby replica, or a
// leader whose cache is not yet synced, reports nothing.
type configCollector struct {
	metrics.BaseStableCollector

	lister listers.VirtPlatformConfigLister
	// leading is true while the controller leads, its cache synced.
	leading func() bool
}

var _ metrics.StableCollector = &configCollector{}

// RegisterConfigs makes /metrics report the configs of lister while
// leading is true (the controller's Leading); once per process.
func RegisterConfigs(lister listers.VirtPlatformConfigLister, leading func() bool) {
	legacyregistry.CustomMustRegister(&configCollector{lister: lister, leading: leading})
}

func (c *configCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- configsDesc
	ch <- configPhaseDesc
	ch <- configPhaseSinceDesc
	ch <- rolloutStartedDesc
	ch <- writeWaitingDesc
	ch <- waitTimeoutDesc
	ch <- partiallyAppliedDesc
	ch <- windowWaitingDesc
	ch <- windowPausesDesc
}

func (c *configCollector) CollectWithStability(ch chan<- metrics.Metric) {
	if !c.leading() {
		return
	}
	list, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	type profilePhase struct{ profile, phase string }
	counts := map[profilePhase]int{}
	for _, cfg := range list {
		phase, profile := string(cfg.Status.Phase), cfg.Spec.Profile
		if phase == "" {
			continue // not reconciled yet
		}
		counts[profilePhase{profile, phase}]++
		collectConfig(ch, cfg)
		if cfg.Status.Phase != v1alpha1.PhaseInProgress {
			continue // items left InProgress by a failed apply are not rolling out
		}
		for i := range cfg.Status.Items {
			collectItem(ch, cfg, &cfg.Status.Items[i])
		}
	}
	for k, n := range counts {
		ch <- metrics.NewLazyConstMetric(configsDesc, metrics.GaugeValue, float64(n), k.profile, k.phase)
	}
}

// collectConfig sends the metrics of a reconciled config itself: its
// phase and since when, whether it is partially applied, its wait timeout.
func collectConfig(ch chan<- metrics.Metric, cfg *v1alpha1.VirtPlatformConfig) {
	phase, profile := string(cfg.Status.Phase), cfg.Spec.Profile
	ch <- metrics.NewLazyConstMetric(configPhaseDesc, metrics.GaugeValue, 1, cfg.Name, profile, phase)
	if cond := meta.FindStatusCondition(cfg.Status.Conditions, phase); cond != nil && cond.Status == metav1.ConditionTrue {
		ch <- metrics.NewLazyConstMetric(configPhaseSinceDesc, metrics.GaugeValue, unixSeconds(cond.LastTransitionTime.Time), cfg.Name, profile, phase)
	}
	if meta.IsStatusConditionTrue(cfg.Status.Conditions, status.ConditionPartiallyApplied) {
		ch <- metrics.NewLazyConstMetric(partiallyAppliedDesc, metrics.GaugeValue, 1, cfg.Name, profile)
	}
	if d, err := advisor.ParseWaitTimeout(cfg.Spec.WaitTimeout); err == nil && d > 0 {
		ch <- metrics.NewLazyConstMetric(waitTimeoutDesc, metrics.GaugeValue, d.Seconds(), cfg.Name, profile)
	}
}

// collectItem sends the metrics of an item of a config in progress: its
// window pauses, and since when it waits for a window, rolls out or waits
// to be written.
func collectItem(ch chan<- metrics.Metric, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) {
	profile := cfg.Spec.Profile
	if it.WindowPauses > 0 && it.State == v1alpha1.ItemStateInProgress {
		ch <- metrics.NewLazyConstMetric(windowPausesDesc, metrics.GaugeValue, float64(it.WindowPauses), cfg.Name, profile, it.Name)
	}
	if w := it.MaintenanceWindow; w != nil && it.State != v1alpha1.ItemStateCompleted && it.State != v1alpha1.ItemStateFailed {
		// Waiting for a window is expected, not a stuck write.
		since := status.ItemDue(&cfg.Status, it)
		if since != nil && !since.IsZero() {
			ch <- metrics.NewLazyConstMetric(windowWaitingDesc, metrics.GaugeValue, unixSeconds(since.Time), cfg.Name, profile, it.Name, w.Name)
		}
		return
	}
	switch {
	case it.State == v1alpha1.ItemStateInProgress && machineconfig.RollsPools(it.TargetRef) && it.LastTransitionTime != nil:
		ch <- metrics.NewLazyConstMetric(rolloutStartedDesc, metrics.GaugeValue, unixSeconds(it.LastTransitionTime.Time), cfg.Name, profile, it.Name)
	case it.State == v1alpha1.ItemStatePending:
		if due := status.ItemDue(&cfg.Status, it); due != nil && !due.IsZero() {
			ch <- metrics.NewLazyConstMetric(writeWaitingDesc, metrics.GaugeValue, unixSeconds(due.Time), cfg.Name, profile, it.Name)
		}
	}
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
