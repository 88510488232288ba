package validation_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// internal defaults and converts a v1alpha1 object as the API server does
// before validation, so the defaulting interactions are covered too.
func internal(t *testing.T, in *v1alpha1.VirtPlatformConfig) *advisor.VirtPlatformConfig {
	t.Helper()
	scheme.Default(in)
	out := &advisor.VirtPlatformConfig{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func config(profile string, mutate func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
	c := &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: profile},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func loadAware(mutate func(*v1alpha1.LoadAwareConfig)) func(*v1alpha1.VirtPlatformConfig) {
	return func(c *v1alpha1.VirtPlatformConfig) {
		c.Spec.Options = &v1alpha1.ProfileOptions{LoadAware: &v1alpha1.LoadAwareConfig{}}
		mutate(c.Spec.Options.LoadAware)
	}
}

func gates(mutate func(*v1alpha1.RolloutGates)) func(*v1alpha1.VirtPlatformConfig) {
	return func(c *v1alpha1.VirtPlatformConfig) {
		c.Spec.Rollout = &v1alpha1.RolloutSpec{Gates: &v1alpha1.RolloutGates{}}
		mutate(c.Spec.Rollout.Gates)
	}
}

func density(mutate func(*v1alpha1.VirtHigherDensityConfig)) func(*v1alpha1.VirtPlatformConfig) {
	return func(c *v1alpha1.VirtPlatformConfig) {
		c.Spec.Options = &v1alpha1.ProfileOptions{VirtHigherDensity: &v1alpha1.VirtHigherDensityConfig{}}
		mutate(c.Spec.Options.VirtHigherDensity)
	}
}

const (
	lar = "load-aware-rebalancing"
	vhd = "virt-higher-density"
	ex  = "example-profile"
)

// served are the profiles of this build as the catalogue describes them
// (its own test checks that it does).
var served = validation.Profiles{
	{Name: lar, Options: advisor.OptionsLoadAware, Validate: validation.LoadAwareOptions},
	{Name: vhd, Options: advisor.OptionsVirtHigherDensity, Validate: validation.VirtHigherDensityOptions},
	{Name: ex},
}

// expectError expects an error on field (or below it) containing message;
// none when field is "".
func expectError(t *testing.T, errs field.ErrorList, fld, message string) {
	t.Helper()
	if fld == "" {
		if len(errs) > 0 {
			t.Fatalf("want valid, got %v", errs)
		}
		return
	}
	for _, e := range errs {
		if strings.HasPrefix(e.Field, fld) && strings.Contains(e.Error(), message) {
			return
		}
	}
	t.Fatalf("want an error on %s containing %q, got %v", fld, message, errs)
}

func TestValidateVirtPlatformConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      *v1alpha1.VirtPlatformConfig
		field   string // "" = valid
		message string
	}{
		{"defaults are valid", config(lar, nil), "", ""},
		{"all profiles valid", config(ex, nil), "", ""},
		{"full load-aware options", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) {
			o.DeschedulingIntervalSeconds = ptr.To[int32](86400)
			o.Mode = "Predictive"
			o.DevDeviationThresholds = "High"
			o.EvictionLimitTotal = ptr.To[int32](1000)
			o.EvictionLimitNode = ptr.To[int32](100)
		})), "", ""},
		{"full density options", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.EnableSwap = ptr.To(false)
			o.MemoryToRequestRatio = ptr.To[int32](120)
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{NodeLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
		})), "", ""},
		{"name must equal profile", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Name = "mine" }),
			"metadata.name", "To ensure a singleton pattern, the VirtPlatformConfig name must exactly match the spec.profile."},
		{"profile required", config("", func(c *v1alpha1.VirtPlatformConfig) { c.Name = "x" }), "spec.profile", "Required value"},
		{"unknown profile", config("turbo", nil), "spec.profile", `supported values: "load-aware-rebalancing", "virt-higher-density", "example-profile"`},
		{"unknown action", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Spec.Action = "Now" }), "spec.action", `supported values: "DryRun", "Apply", "Ignore"`},
		{"unknown failurePolicy", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Spec.FailurePolicy = "Retry" }), "spec.failurePolicy", `supported values: "Abort", "Continue"`},
		{"waitTimeout not a duration", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Spec.WaitTimeout = "soon" }), "spec.waitTimeout", "must be a Go duration"},
		{"waitTimeout negative", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Spec.WaitTimeout = "-5m" }), "spec.waitTimeout", "must be positive"},
		{"waitTimeout zero", config(lar, func(c *v1alpha1.VirtPlatformConfig) { c.Spec.WaitTimeout = "0s" }), "spec.waitTimeout", "must be positive"},
		{"interval too small", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DeschedulingIntervalSeconds = ptr.To[int32](59) })),
			"spec.options.loadAware.deschedulingIntervalSeconds", "must be between 60 and 86400, inclusive"},
		{"interval too large", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DeschedulingIntervalSeconds = ptr.To[int32](86401) })),
			"spec.options.loadAware.deschedulingIntervalSeconds", "must be between 60 and 86400, inclusive"},
		{"unknown mode", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.Mode = "Eager" })),
			"spec.options.loadAware.mode", `supported values: "Automatic", "Predictive"`},
		{"unknown thresholds", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevDeviationThresholds = "Extreme" })),
			"spec.options.loadAware.devDeviationThresholds", `"AsymmetricLow"`},
		{"eviction total too small", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.EvictionLimitTotal = ptr.To[int32](0) })),
			"spec.options.loadAware.evictionLimitTotal", "must be between 1 and 1000, inclusive"},
		{"eviction total too large", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.EvictionLimitTotal = ptr.To[int32](1001) })),
			"spec.options.loadAware.evictionLimitTotal", "must be between 1 and 1000, inclusive"},
		{"eviction node too large", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.EvictionLimitNode = ptr.To[int32](101) })),
			"spec.options.loadAware.evictionLimitNode", "must be between 1 and 100, inclusive"},
		{"ratio too small", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) { o.MemoryToRequestRatio = ptr.To[int32](99) })),
			"spec.options.virtHigherDensity.memoryToRequestRatio", "must be between 100 and 300, inclusive"},
		{"ratio too large", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) { o.MemoryToRequestRatio = ptr.To[int32](301) })),
			"spec.options.virtHigherDensity.memoryToRequestRatio", "must be between 100 and 300, inclusive"},
		{"ratio above 120 needs swap", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.EnableSwap = ptr.To(false)
			o.MemoryToRequestRatio = ptr.To[int32](121)
		})), "spec.options.virtHigherDensity.memoryToRequestRatio", "memoryToRequestRatio > 120 requires enableSwap=true"},
		{"swap off alone is accepted (ratio defaults to 100)", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) { o.EnableSwap = ptr.To(false) })), "", ""},
		{"swap off with the swap default ratio set explicitly", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.EnableSwap = ptr.To(false)
			o.MemoryToRequestRatio = ptr.To[int32](150)
		})), "spec.options.virtHigherDensity.memoryToRequestRatio", "memoryToRequestRatio > 120 requires enableSwap=true"},
		{"bad KSM selector", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{NodeLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}
		})), "spec.options.virtHigherDensity.ksmConfiguration.nodeLabelSelector.matchLabels", "name part must consist of"},
		{"KSM zero pages and THP madvise with KSM on", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.THPMadvise = ptr.To(true)
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{Enabled: ptr.To(true), UseZeroPages: ptr.To(true)}
		})), "", ""},
		{"KSM zero pages with KSM enabled by default", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{UseZeroPages: ptr.To(true)}
		})), "", ""},
		{"KSM zero pages off with KSM off", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{Enabled: ptr.To(false), UseZeroPages: ptr.To(false)}
		})), "", ""},
		{"THP madvise with KSM off", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.THPMadvise = ptr.To(true)
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{Enabled: ptr.To(false)}
		})), "", ""},
		{"KSM zero pages need KSM", config(vhd, density(func(o *v1alpha1.VirtHigherDensityConfig) {
			o.KSMConfiguration = &v1alpha1.KSMConfiguration{Enabled: ptr.To(false), UseZeroPages: ptr.To(true)}
		})), "spec.options.virtHigherDensity.ksmConfiguration.useZeroPages", "useZeroPages requires ksmConfiguration.enabled: true"},
		{"cooldowns within their ranges and each other", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) {
			o.DevMigrationCooldown, o.DevMaxMigrationCooldown, o.DevMigrationHistoryWindow = "30m", "4h", "24h"
		})), "", ""},
		{"cooldown alone, below the default maximum", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "1h30m" })), "", ""},
		{"cooldowns at their bounds", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) {
			o.DevMigrationCooldown, o.DevMaxMigrationCooldown, o.DevMigrationHistoryWindow = "1m", "120h", "720h"
		})), "", ""},
		{"cooldown not a duration", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "soon" })),
			"spec.options.loadAware.devMigrationCooldown", "must be a duration such as 30m or 2h"},
		{"cooldown without a unit", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "900" })),
			"spec.options.loadAware.devMigrationCooldown", "must be a duration such as 30m or 2h"},
		{"cooldown negative", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "-5m" })),
			"spec.options.loadAware.devMigrationCooldown", "must be between 1m0s and 24h0m0s, inclusive"},
		{"cooldown too long", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "25h" })),
			"spec.options.loadAware.devMigrationCooldown", "must be between 1m0s and 24h0m0s, inclusive"},
		{"max cooldown too short", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMaxMigrationCooldown = "30s" })),
			"spec.options.loadAware.devMaxMigrationCooldown", "must be between 1m0s and 168h0m0s, inclusive"},
		{"history window too long", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationHistoryWindow = "721h" })),
			"spec.options.loadAware.devMigrationHistoryWindow", "must be between 1h0m0s and 720h0m0s, inclusive"},
		{"max cooldown below cooldown", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) {
			o.DevMigrationCooldown, o.DevMaxMigrationCooldown = "2h", "1h"
		})), "spec.options.loadAware.devMaxMigrationCooldown", "devMaxMigrationCooldown (1h0m0s) must be at least devMigrationCooldown (2h0m0s)"},
		{"cooldown above the default maximum", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMigrationCooldown = "7h" })),
			"spec.options.loadAware.devMigrationCooldown", "devMaxMigrationCooldown (6h0m0s) must be at least devMigrationCooldown (7h0m0s)"},
		{"history window below 6 max cooldowns", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) {
			o.DevMaxMigrationCooldown, o.DevMigrationHistoryWindow = "4h", "23h"
		})), "spec.options.loadAware.devMigrationHistoryWindow", "must be at least 6 x devMaxMigrationCooldown (4h0m0s)"},
		{"max cooldown beyond the default window", config(lar, loadAware(func(o *v1alpha1.LoadAwareConfig) { o.DevMaxMigrationCooldown = "9h" })),
			"spec.options.loadAware.devMaxMigrationCooldown", "devMigrationHistoryWindow (48h0m0s) must be at least 6 x devMaxMigrationCooldown (9h0m0s)"},
		{"gates at their bounds", config(lar, gates(func(g *v1alpha1.RolloutGates) {
			g.NodeReadyTimeout, g.Soak, g.MaxFailedMigrations = "30s", "24h", ptr.To[int32](1000)
			g.Alerts = &v1alpha1.AlertGate{Matchers: []string{`severity="critical"`, `namespace!~"openshift-.*"`}, Ignore: []string{"Watchdog"}, OnError: v1alpha1.GateErrorIgnore}
		})), "", ""},
		{"node timeout below 30s", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.NodeReadyTimeout = "29s" })),
			"spec.rollout.gates.nodeReadyTimeout", "must be between 30s and 24h0m0s"},
		{"soak beyond a day", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.Soak = "24h1s" })),
			"spec.rollout.gates.soak", "must be between 0s and 24h0m0s"},
		{"soak not a duration", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.Soak = "5" })),
			"spec.rollout.gates.soak", "must be a Go duration such as 20m"},
		{"failed migrations negative", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.MaxFailedMigrations = ptr.To[int32](-1) })),
			"spec.rollout.gates.maxFailedMigrations", "must be between 0 and 1000"},
		{"failed migrations beyond the cap", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.MaxFailedMigrations = ptr.To[int32](1001) })),
			"spec.rollout.gates.maxFailedMigrations", "must be between 0 and 1000"},
		{"an alert matcher that does not parse", config(lar, gates(func(g *v1alpha1.RolloutGates) {
			g.Alerts = &v1alpha1.AlertGate{Matchers: []string{`severity="critical"`, `severity=~"(critical"`}}
		})), "spec.rollout.gates.alerts.matchers[1]", "invalid regular expression"},
		{"an unknown onError", config(lar, gates(func(g *v1alpha1.RolloutGates) { g.Alerts = &v1alpha1.AlertGate{OnError: "Retry"} })),
			"spec.rollout.gates.alerts.onError", "Unsupported value"},
		{"density options on load-aware", config(lar, density(func(*v1alpha1.VirtHigherDensityConfig) {})),
			"spec.options.virtHigherDensity", "When profile is 'load-aware-rebalancing', only options.loadAware may be set"},
		{"load-aware options on density", config(vhd, loadAware(func(*v1alpha1.LoadAwareConfig) {})),
			"spec.options.loadAware", "When profile is 'virt-higher-density', only options.virtHigherDensity may be set"},
		{"load-aware options on example", config(ex, loadAware(func(*v1alpha1.LoadAwareConfig) {})),
			"spec.options.loadAware", "options.loadAware can only be used with profile 'load-aware-rebalancing'"},
		{"density options on example", config(ex, density(func(*v1alpha1.VirtHigherDensityConfig) {})),
			"spec.options.virtHigherDensity", "options.virtHigherDensity can only be used with profile 'virt-higher-density'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validation.ValidateVirtPlatformConfig(internal(t, tt.in), served)
			expectError(t, errs, tt.field, tt.message)
		})
	}
}

// The profiles and options blocks admitted are those the server serves.
func TestValidationFollowsTheServedProfiles(t *testing.T) {
	servedHere := validation.Profiles{{Name: ex}, {Name: "turbo", Options: advisor.OptionsLoadAware}}
	tests := []struct {
		name    string
		in      *v1alpha1.VirtPlatformConfig
		field   string // "" = valid
		message string
	}{
		{"a profile served", config("turbo", nil), "", ""},
		{"its options block", config("turbo", loadAware(func(*v1alpha1.LoadAwareConfig) {})), "", ""},
		{"a profile not served", config(lar, nil), "spec.profile", `supported values: "example-profile", "turbo"`},
		{"no profile", config("", func(c *v1alpha1.VirtPlatformConfig) { c.Name = "x" }), "spec.profile", `one of ["example-profile" "turbo"]`},
		{"another profile's block", config(ex, loadAware(func(*v1alpha1.LoadAwareConfig) {})),
			"spec.options.loadAware", "options.loadAware can only be used with profile 'turbo'"},
		{"a block no profile served reads", config(ex, density(func(*v1alpha1.VirtHigherDensityConfig) {})),
			"spec.options.virtHigherDensity", "options.virtHigherDensity is read by no profile this server serves"},
		{"a block not its own", config("turbo", density(func(*v1alpha1.VirtHigherDensityConfig) {})),
			"spec.options.virtHigherDensity", "When profile is 'turbo', only options.loadAware may be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validation.ValidateVirtPlatformConfig(internal(t, tt.in), servedHere)
			expectError(t, errs, tt.field, tt.message)
		})
	}
}

func TestValidateVirtPlatformConfigUpdate(t *testing.T) {
	old := internal(t, config(lar, nil))
	old.ResourceVersion = "1"
	tests := []struct {
		name    string
		mutate  func(*advisor.VirtPlatformConfig)
		field   string
		message string
	}{
		{"action change is fine", func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionApply }, "", ""},
		{"profile is immutable", func(c *advisor.VirtPlatformConfig) { c.Spec.Profile = vhd }, "spec.profile", "Profile is immutable"},
		{"spec still validated", func(c *advisor.VirtPlatformConfig) { c.Spec.Action = "Later" }, "spec.action", "Unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := old.DeepCopy()
			tt.mutate(c)
			errs := validation.ValidateVirtPlatformConfigUpdate(c, old, served)
			expectError(t, errs, tt.field, tt.message)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	old := internal(t, config(lar, nil))
	old.ResourceVersion = "1"
	tests := []struct {
		name   string
		mutate func(*advisor.VirtPlatformConfigStatus)
		field  string
	}{
		{"a phase", func(s *advisor.VirtPlatformConfigStatus) { s.Phase = advisor.PhaseDrafting }, ""},
		{"unknown phase", func(s *advisor.VirtPlatformConfigStatus) { s.Phase = "Sleeping" }, "status.phase"},
		{"unknown impact", func(s *advisor.VirtPlatformConfigStatus) { s.ImpactSeverity = "Huge" }, "status.impactSeverity"},
		{"duplicate item", func(s *advisor.VirtPlatformConfigStatus) {
			s.Items = []advisor.VirtPlatformConfigItem{{Name: "a"}, {Name: "a"}}
		}, "status.items[1].name"},
		{"bad condition", func(s *advisor.VirtPlatformConfigStatus) {
			s.Conditions = []metav1.Condition{{Type: "Drafting", Status: "Maybe", Reason: "X"}}
		}, "status.conditions[0].status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := old.DeepCopy()
			tt.mutate(&c.Status)
			errs := validation.ValidateVirtPlatformConfigStatusUpdate(c, old)
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field {
					return
				}
			}
			t.Fatalf("want an error on %s, got %v", tt.field, errs)
		})
	}
}

func TestValidateApproval(t *testing.T) {
	if errs := validation.ValidateApproval(&advisor.Approval{}); len(errs) != 1 || errs[0].Field != "spec.planHash" {
		t.Fatalf("want spec.planHash required, got %v", errs)
	}
	if errs := validation.ValidateApproval(&advisor.Approval{Spec: advisor.ApprovalSpec{PlanHash: "abc"}}); len(errs) != 0 {
		t.Fatalf("want valid, got %v", errs)
	}
}
