// Package fuzzer fills advisor objects with random values for round-trip tests.
package fuzzer

import (
	"fmt"

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
		// Every options block: an option with a default (+default), unset,
		// would be defaulted on decoding; fillDefaulted* are generated from
		// the markers (hack/optionsgen), so a new block needs nothing here.
		func(o *advisor.ProfileOptions, c randfill.Continue) {
			c.FillNoCustom(o)
			fillDefaultedProfileOptions(o)
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
	}
}
