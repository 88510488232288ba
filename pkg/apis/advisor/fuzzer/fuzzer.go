// Package fuzzer fills advisor objects with random values for round-trip tests.
package fuzzer

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// Funcs returns the fuzzer functions of the advisor group.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		// Desired states are arbitrary objects: fill them with valid JSON,
		// as the server stores them, so the round trip compares like with like.
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"}}`, c.Uint32()))
		},
		// Defaulted fields must carry non-empty values, or decoding would
		// default them and the round trip would differ.
		func(s *advisor.VirtPlatformConfigSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Action == "" {
				s.Action = advisor.PlanActionDryRun
			}
			if s.FailurePolicy == "" {
				s.FailurePolicy = advisor.FailurePolicyAbort
			}
		},
		func(s *advisor.MaintenanceWindowSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.TimeZone == "" {
				s.TimeZone = "UTC"
			}
			if s.Kind == "" {
				s.Kind = advisor.MaintenanceWindowKindAllow
			}
		},
		// Every options block: an unset scalar option would be defaulted
		// on decoding; a block of a new profile needs no function here.
		func(o *advisor.ProfileOptions, c randfill.Continue) {
			c.FillNoCustom(o)
			setScalars(reflect.ValueOf(o).Elem())
		},
		func(b *advisor.PolicyBounds, c randfill.Continue) {
			c.FillNoCustom(b)
			if b.MaxImpact == "" {
				b.MaxImpact = advisor.ImpactLow
			}
			if b.Reboots == "" {
				b.Reboots = advisor.RebootBoundNone
			}
			if len(b.VMFates) == 0 {
				b.VMFates = []advisor.VMFate{"LiveMigrate"}
			}
		},
		func(o *advisor.LoadAwareConfig, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.DeschedulingIntervalSeconds == nil {
				o.DeschedulingIntervalSeconds = new(int32)
			}
			if o.EnablePSIMetrics == nil {
				o.EnablePSIMetrics = new(bool)
			}
			if o.Mode == "" {
				o.Mode = "Automatic"
			}
			if o.DevDeviationThresholds == "" {
				o.DevDeviationThresholds = "AsymmetricLow"
			}
		},
		func(o *advisor.VirtHigherDensityConfig, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.EnableSwap == nil {
				o.EnableSwap = new(bool)
			}
			if o.MemoryToRequestRatio == nil {
				o.MemoryToRequestRatio = new(int32)
			}
		},
		// Strings with a default: empty, they would be defaulted on decoding.
		func(o *advisor.HugepagesConfig, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.Pool == "" {
				o.Pool = "worker"
			}
			if o.PageSize == "" {
				o.PageSize = "1G"
			}
			if o.MemoryPercent == nil {
				o.MemoryPercent = new(int32)
			}
			if o.FloorGiB == nil {
				o.FloorGiB = new(int32)
			}
		},
		func(o *advisor.PciPassthroughConfig, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.Pool == "" {
				o.Pool = "worker"
			}
		},
		// A string option with a default is no pointer: set, or defaulted.
		func(o *advisor.DedicatedCPUsConfig, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.TopologyManagerPolicy == "" {
				o.TopologyManagerPolicy = "single-numa-node"
			}
		},
		func(o *advisor.KSMConfiguration, c randfill.Continue) {
			c.FillNoCustom(o)
			if o.Enabled == nil {
				o.Enabled = new(bool)
			}
		},
	}
}

// setScalars gives every nil pointer to a scalar in the blocks of v (a
// ProfileOptions) a zero value.
func setScalars(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		block := v.Field(i)
		if block.Kind() != reflect.Pointer || block.IsNil() || block.Elem().Kind() != reflect.Struct {
			continue
		}
		b := block.Elem()
		for j := 0; j < b.NumField(); j++ {
			f := b.Field(j)
			if f.Kind() != reflect.Pointer || !f.IsNil() {
				continue
			}
			switch f.Type().Elem().Kind() {
			case reflect.Bool, reflect.Int32, reflect.Int64, reflect.String:
				f.Set(reflect.New(f.Type().Elem()))
			}
		}
	}
}
