package env

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/hardware"
)

// The Nodes and NodeResourceTopologies of the local hardware read as the
// profiles read real ones.
func TestLocalHardwareReadsAsReal(t *testing.T) {
	const gi = int64(1) << 30
	tests := []struct {
		class HardwareClass
		want  hardware.Node
	}{
		{LocalHardware[0], hardware.Node{Name: "worker-1", CPUs: 32, Memory: 128 * gi, MemoryCapacity: 128 * gi, HugePages: map[string]int64{}, Vendor: "GenuineIntel", Architecture: "amd64", SMT: hardware.SMTOff,
			Zones: []hardware.Zone{{Name: "node-0", CPUs: 32, Memory: 128 * gi}}}},
		{LocalHardware[1], hardware.Node{Name: "worker-cnv-1", CPUs: 64, Memory: 256 * gi, MemoryCapacity: 288 * gi, HugePages: map[string]int64{"hugepages-1Gi": 32 * gi}, Vendor: "AuthenticAMD", Architecture: "amd64", SMT: hardware.SMTOff,
			Zones: []hardware.Zone{{Name: "node-0", CPUs: 32, Memory: 128 * gi}, {Name: "node-1", NUMAID: 1, CPUs: 32, Memory: 128 * gi}}}},
		{HardwareClass{Pool: "small", Count: 1, Vendor: "GenuineIntel", CPUs: 8, Memory: "16Gi"}, hardware.Node{Name: "small-1", CPUs: 8, Memory: 16 * gi, MemoryCapacity: 16 * gi,
			HugePages: map[string]int64{}, Vendor: "GenuineIntel", Architecture: "amd64", SMT: hardware.SMTOff, Zones: []hardware.Zone{{Name: "node-0", CPUs: 8, Memory: 16 * gi}},
			ZonesAssumed: "no NodeResourceTopology for node 'small-1': one NUMA zone assumed"}},
	}
	for _, tc := range tests {
		t.Run(tc.class.Pool, func(t *testing.T) {
			name := tc.want.Name
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.class.NodeObject(name))
			if err != nil {
				t.Fatal(err)
			}
			topo := hardware.Topologies{ByNode: map[string]*unstructured.Unstructured{}}
			if nrt := tc.class.TopologyObject(name); nrt != nil {
				topo.ByNode[name] = nrt
			}
			if got, err := hardware.ReadNode(&unstructured.Unstructured{Object: raw}, topo); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ReadNode = %+v, %v; want %+v", got, err, tc.want)
			}
			if v, ok := tc.class.NodeObject(name).Labels["node-role.kubernetes.io/"+tc.class.Pool]; !ok || v != "" {
				t.Errorf("no role label of pool %s: %v", tc.class.Pool, tc.class.NodeObject(name).Labels)
			}
		})
	}
	if got := LocalHardware[1].NodeNames(); !reflect.DeepEqual(got, []string{"worker-cnv-0", "worker-cnv-1", "worker-cnv-2"}) {
		t.Errorf("NodeNames = %v", got)
	}
}
