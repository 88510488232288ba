package capacity

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// 10 000 VMs on a pool of 500 nodes, every one of which drains.
func BenchmarkSimulate10000VMs500Nodes(b *testing.B) {
	var nodes []*corev1.Node
	var vms []VM
	var order []string
	for i := 0; i < 500; i++ {
		name := fmt.Sprintf("n%03d", i)
		nodes = append(nodes, node(name, 512, withLabel("cpu-model.node.kubevirt.io/Icelake-Server")))
		order = append(order, name)
		for j := 0; j < 20; j++ {
			vms = append(vms, vm(fmt.Sprintf("vm-%d-%d", i, j), name, 16, selects("cpu-model.node.kubevirt.io/Icelake-Server")))
		}
	}
	in := cluster(nodes, vms)
	for i := range vms {
		vms[i].Demand = DemandOf(vms[i].Launcher) // as the plan keeps it per launcher
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := Simulate(in, vms, Rollout{Pool: "worker", Nodes: order, MaxUnavailable: 1}); !res.Fits() {
			b.Fatal(res.Summary())
		}
	}
}
