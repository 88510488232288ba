package plan

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// assessReads are the reads of a plan on nodes Nodes with perNode running
// VMIs each, every one with its launcher (launchers true) or none, as the
// caches serve them.
func assessReads(nodes, perNode int, launchers bool) *clusterReads {
	var nodeObjs []unstructured.Unstructured
	var pods []cluster.Launcher
	var vmis []kubevirt.VMI
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%03d", i)
		n := capNode(name, 512, nil, nil)
		n.SetResourceVersion("1")
		nodeObjs = append(nodeObjs, n)
		for j := 0; j < perNode; j++ {
			vm := fmt.Sprintf("vm-%d-%d", i, j)
			v := kubevirt.VMI{Namespace: "default", Name: vm, Node: name, Phase: "Running", Strategy: "LiveMigrate", Condition: true, Migratable: true}
			if j == 0 {
				v.Strategy = "None"
			}
			vmis = append(vmis, v)
			if launchers {
				pods = append(pods, capLauncher("default", vm, name, 16, nil, nil))
			}
		}
	}
	slices.SortFunc(vmis, kubevirt.CompareVMIs) // as the cache serves them
	r := capReads(pods...)
	r.at = &readAt{}
	r.nodes = func() ([]unstructured.Unstructured, error) { return nodeObjs, nil }
	r.vmis = func() ([]kubevirt.VMI, bool, error) { return vmis, true, nil }
	r.policies = func() (*disruption.Policies, string, error) { return nil, "", nil }
	return r
}

// BenchmarkAssess10000VMs500Nodes is the part of a plan that grows with
// the VMs: what draining a pool of 500 nodes does to its 10 000 VMs, and
// whether the migrating ones fit.
func BenchmarkAssess10000VMs500Nodes(b *testing.B) {
	for _, launchers := range []bool{false, true} {
		b.Run(fmt.Sprintf("launchers=%v", launchers), func(b *testing.B) {
			reads := assessReads(500, 20, launchers)
			pools := []unstructured.Unstructured{*workerPool(nil)}
			change := mcChange{after: map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}}
			b.ReportAllocs()
			for b.Loop() {
				reboots := []v1alpha1.PoolReboot{{Pool: "worker"}}
				if _, err := reads.assess(context.Background(), reboots, pools, change, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
