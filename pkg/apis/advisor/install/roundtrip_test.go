package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	advisorfuzzer "github.com/kubevirt/virt-advisor/pkg/apis/advisor/fuzzer"
)

func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, advisorfuzzer.Funcs)
}
