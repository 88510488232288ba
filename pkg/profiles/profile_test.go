package profiles

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestResolveOptions(t *testing.T) {
	opts := ResolveOptions(advisor.OptionsLoadAware, v1alpha1.VirtPlatformConfigSpec{Profile: "load-aware-rebalancing"})
	if opts.LoadAware == nil || *opts.LoadAware.DeschedulingIntervalSeconds != 60 || opts.LoadAware.Mode != "Automatic" ||
		!*opts.LoadAware.EnablePSIMetrics || opts.LoadAware.DevDeviationThresholds != "AsymmetricLow" {
		t.Errorf("load-aware defaults not resolved: %+v", opts.LoadAware)
	}
	if opts.VirtHigherDensity != nil {
		t.Errorf("a block the profile does not read was filled: %+v", opts.VirtHigherDensity)
	}

	spec := v1alpha1.VirtPlatformConfigSpec{Profile: "virt-higher-density", Options: &v1alpha1.ProfileOptions{
		VirtHigherDensity: &v1alpha1.VirtHigherDensityConfig{MemoryToRequestRatio: ptr.To[int32](200)}}}
	opts = ResolveOptions(advisor.OptionsVirtHigherDensity, spec)
	if *opts.VirtHigherDensity.MemoryToRequestRatio != 200 || !*opts.VirtHigherDensity.EnableSwap {
		t.Errorf("density options: %+v", opts.VirtHigherDensity)
	}
	if spec.Options.VirtHigherDensity.EnableSwap != nil {
		t.Error("ResolveOptions changed the spec it was given")
	}

	if opts := ResolveOptions("", v1alpha1.VirtPlatformConfigSpec{Profile: "example-profile"}); opts.LoadAware != nil || opts.VirtHigherDensity != nil {
		t.Errorf("a profile without options got %+v", opts)
	}
}
