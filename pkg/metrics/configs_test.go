package metrics

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

var (
	t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) // 1795428000
	t1 = t0.Add(90 * time.Second)
)

func config(name string, phase v1alpha1.ConfigPhase, mutate ...func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
	cfg := &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: name},
		Status:     v1alpha1.VirtPlatformConfigStatus{Phase: phase},
	}
	if phase != "" {
		cfg.Status.Conditions = []metav1.Condition{
			{Type: string(v1alpha1.PhasePending), Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)},
			{Type: string(phase), Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		}
	}
	for _, m := range mutate {
		m(cfg)
	}
	return cfg
}

func item(name, kind string, state v1alpha1.ItemState, at time.Time) v1alpha1.VirtPlatformConfigItem {
	apiVersion := "machineconfiguration.openshift.io/v1"
	if kind != "MachineConfig" {
		apiVersion = "operator.openshift.io/v1"
	}
	ts := metav1.NewTime(at)
	return v1alpha1.VirtPlatformConfigItem{
		Name: name, TargetRef: v1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name},
		State: state, LastTransitionTime: &ts,
	}
}

func listerOf(t *testing.T, cfgs ...*v1alpha1.VirtPlatformConfig) listers.VirtPlatformConfigLister {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, cfg := range cfgs {
		if err := indexer.Add(cfg); err != nil {
			t.Fatal(err)
		}
	}
	return listers.NewVirtPlatformConfigLister(indexer)
}

const (
	helpConfigs        = "# HELP virt_advisor_configs [ALPHA] VirtPlatformConfigs by profile and phase.\n# TYPE virt_advisor_configs gauge\n"
	helpPhase          = "# HELP virt_advisor_config_phase [ALPHA] The current phase of a VirtPlatformConfig: 1 for the phase it is in; other phases have no series.\n# TYPE virt_advisor_config_phase gauge\n"
	helpPhaseSince     = "# HELP virt_advisor_config_phase_since_timestamp_seconds [ALPHA] When a VirtPlatformConfig entered its current phase (the lastTransitionTime of its phase condition), in Unix seconds.\n# TYPE virt_advisor_config_phase_since_timestamp_seconds gauge\n"
	helpRolloutStarted = "# HELP virt_advisor_config_rollout_started_timestamp_seconds [ALPHA] When a MachineConfig item of a VirtPlatformConfig in phase InProgress started rolling out, in Unix seconds.\n# TYPE virt_advisor_config_rollout_started_timestamp_seconds gauge\n"
	helpWriteWaiting   = "# HELP virt_advisor_config_write_waiting_since_timestamp_seconds [ALPHA] When an approved item of a VirtPlatformConfig in phase InProgress became due without being written yet (it waits for its MachineConfigPools: updating, degraded or paused by someone else), in Unix seconds.\n# TYPE virt_advisor_config_write_waiting_since_timestamp_seconds gauge\n"
	helpWaitTimeout    = "# HELP virt_advisor_config_wait_timeout_seconds [ALPHA] spec.waitTimeout of a VirtPlatformConfig, in seconds; no series when unset (wait forever).\n# TYPE virt_advisor_config_wait_timeout_seconds gauge\n"
)

var configMetricNames = []string{
	"virt_advisor_configs", "virt_advisor_config_phase", "virt_advisor_config_phase_since_timestamp_seconds",
	"virt_advisor_config_rollout_started_timestamp_seconds", "virt_advisor_config_wait_timeout_seconds",
	"virt_advisor_config_write_waiting_since_timestamp_seconds",
}

func TestConfigCollector(t *testing.T) {
	tests := []struct {
		name    string
		standby bool // the controller does not lead
		lister  func(t *testing.T) listers.VirtPlatformConfigLister
		want    string
	}{{
		name:    "standby replica: no series",
		standby: true,
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("load-aware-rebalancing", v1alpha1.PhaseDrifted))
		},
		want: "",
	}, {
		name:   "leader without configs",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister { return listerOf(t) },
		want:   "",
	}, {
		name: "a drifted config and one not reconciled yet",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("load-aware-rebalancing", v1alpha1.PhaseDrifted), config("virt-higher-density", ""))
		},
		want: helpConfigs + `virt_advisor_configs{phase="Drifted",profile="load-aware-rebalancing"} 1
` + helpPhase + `virt_advisor_config_phase{name="load-aware-rebalancing",phase="Drifted",profile="load-aware-rebalancing"} 1
` + helpPhaseSince + `virt_advisor_config_phase_since_timestamp_seconds{name="load-aware-rebalancing",phase="Drifted",profile="load-aware-rebalancing"} 1.795428e+09
`,
	}, {
		name: "a phase without its condition has no since series",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("example-profile", v1alpha1.PhaseFailed, func(c *v1alpha1.VirtPlatformConfig) { c.Status.Conditions = nil }))
		},
		want: helpConfigs + `virt_advisor_configs{phase="Failed",profile="example-profile"} 1
` + helpPhase + `virt_advisor_config_phase{name="example-profile",phase="Failed",profile="example-profile"} 1
`,
	}, {
		name: "rolling out: MachineConfig items in progress, with the wait timeout",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("load-aware-rebalancing", v1alpha1.PhaseInProgress, func(c *v1alpha1.VirtPlatformConfig) {
				c.Spec.WaitTimeout = "1h30m"
				c.Status.Items = []v1alpha1.VirtPlatformConfigItem{
					item("enable-psi-metrics", "MachineConfig", v1alpha1.ItemStateInProgress, t1),
					item("enable-load-aware-descheduling", "KubeDescheduler", v1alpha1.ItemStateInProgress, t1),
					item("done-already", "MachineConfig", v1alpha1.ItemStateCompleted, t1),
				}
			}))
		},
		want: helpConfigs + `virt_advisor_configs{phase="InProgress",profile="load-aware-rebalancing"} 1
` + helpPhase + `virt_advisor_config_phase{name="load-aware-rebalancing",phase="InProgress",profile="load-aware-rebalancing"} 1
` + helpPhaseSince + `virt_advisor_config_phase_since_timestamp_seconds{name="load-aware-rebalancing",phase="InProgress",profile="load-aware-rebalancing"} 1.795428e+09
` + helpRolloutStarted + `virt_advisor_config_rollout_started_timestamp_seconds{item="enable-psi-metrics",name="load-aware-rebalancing",profile="load-aware-rebalancing"} 1.79542809e+09
` + helpWaitTimeout + `virt_advisor_config_wait_timeout_seconds{name="load-aware-rebalancing",profile="load-aware-rebalancing"} 5400
`,
	}, {
		name: "approved items not written yet wait since their approval, or their own later transition",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("virt-higher-density", v1alpha1.PhaseInProgress, func(c *v1alpha1.VirtPlatformConfig) {
				c.Status.Approval = &v1alpha1.ApprovalRecord{ApprovedAt: metav1.NewTime(t1.Add(-time.Minute))}
				c.Status.Items = []v1alpha1.VirtPlatformConfigItem{
					item("enable-kubelet-swap", "MachineConfig", v1alpha1.ItemStatePending, t1),
					item("configure-higher-density", "HyperConverged", v1alpha1.ItemStatePending, t1.Add(-time.Hour)),
				}
			}))
		},
		want: helpConfigs + `virt_advisor_configs{phase="InProgress",profile="virt-higher-density"} 1
` + helpPhase + `virt_advisor_config_phase{name="virt-higher-density",phase="InProgress",profile="virt-higher-density"} 1
` + helpPhaseSince + `virt_advisor_config_phase_since_timestamp_seconds{name="virt-higher-density",phase="InProgress",profile="virt-higher-density"} 1.795428e+09
` + helpWriteWaiting + `virt_advisor_config_write_waiting_since_timestamp_seconds{item="configure-higher-density",name="virt-higher-density",profile="virt-higher-density"} 1.79542803e+09
virt_advisor_config_write_waiting_since_timestamp_seconds{item="enable-kubelet-swap",name="virt-higher-density",profile="virt-higher-density"} 1.79542809e+09
`,
	}, {
		name: "a review is not a wait: pending items outside InProgress have no series",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("virt-higher-density", v1alpha1.PhaseReviewRequired, func(c *v1alpha1.VirtPlatformConfig) {
				c.Status.Items = []v1alpha1.VirtPlatformConfigItem{item("enable-kubelet-swap", "MachineConfig", v1alpha1.ItemStatePending, t1)}
			}))
		},
		want: helpConfigs + `virt_advisor_configs{phase="ReviewRequired",profile="virt-higher-density"} 1
` + helpPhase + `virt_advisor_config_phase{name="virt-higher-density",phase="ReviewRequired",profile="virt-higher-density"} 1
` + helpPhaseSince + `virt_advisor_config_phase_since_timestamp_seconds{name="virt-higher-density",phase="ReviewRequired",profile="virt-higher-density"} 1.795428e+09
`,
	}, {
		name: "a failed apply leaves items in progress: not a rollout",
		lister: func(t *testing.T) listers.VirtPlatformConfigLister {
			return listerOf(t, config("virt-higher-density", v1alpha1.PhaseFailed, func(c *v1alpha1.VirtPlatformConfig) {
				c.Status.Items = []v1alpha1.VirtPlatformConfigItem{item("enable-kubelet-swap", "MachineConfig", v1alpha1.ItemStateInProgress, t1)}
			}))
		},
		want: helpConfigs + `virt_advisor_configs{phase="Failed",profile="virt-higher-density"} 1
` + helpPhase + `virt_advisor_config_phase{name="virt-higher-density",phase="Failed",profile="virt-higher-density"} 1
` + helpPhaseSince + `virt_advisor_config_phase_since_timestamp_seconds{name="virt-higher-density",phase="Failed",profile="virt-higher-density"} 1.795428e+09
`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &configCollector{lister: tc.lister(t), leading: func() bool { return !tc.standby }}
			if err := testutil.CustomCollectAndCompare(c, strings.NewReader(tc.want), configMetricNames...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A deleted config leaves no series behind: the collector reads the cache
// at every scrape.
func TestConfigCollectorForgetsDeletedConfigs(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cfg := config("example-profile", v1alpha1.PhaseDrifted)
	if err := indexer.Add(cfg); err != nil {
		t.Fatal(err)
	}
	lister := listers.NewVirtPlatformConfigLister(indexer)
	leading := func() bool { return true }
	c := &configCollector{lister: lister, leading: leading}
	want := helpPhase + `virt_advisor_config_phase{name="example-profile",phase="Drifted",profile="example-profile"} 1
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), "virt_advisor_config_phase"); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Delete(cfg); err != nil {
		t.Fatal(err)
	}
	c = &configCollector{lister: lister, leading: leading} // a collector registers once per registry
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(""), configMetricNames...); err != nil {
		t.Fatal(err)
	}
}
