package plan

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// A paused pool's pending rollout is assessed from its rendered configs,
// the one its nodes run and the one it names, with the VMs on the nodes
// still to update; nothing is guessed.
func TestPendingDrainImpact(t *testing.T) {
	rendered := func(name string, kargs ...interface{}) *unstructured.Unstructured {
		mc := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"kernelArguments": kargs}}}
		mc.SetGroupVersionKind(machineconfig.MachineConfigGVK)
		mc.SetName(name)
		return mc
	}
	pool := func(spec, status string) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]interface{}{
			"metadata": map[string]interface{}{"name": "worker"},
			"spec": map[string]interface{}{"configuration": map[string]interface{}{"name": spec},
				"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{disruption.WorkerRoleLabel: ""}}},
			"status": map[string]interface{}{"configuration": map[string]interface{}{"name": status}, "machineCount": int64(3)},
		}}
	}
	node := func(name, current string) unstructured.Unstructured {
		n := unstructured.Unstructured{Object: map[string]interface{}{}}
		n.SetName(name)
		n.SetLabels(map[string]string{disruption.WorkerRoleLabel: ""})
		n.SetAnnotations(map[string]string{disruption.CurrentConfigAnnotation: current})
		return n
	}
	gpu := kubevirt.VMI{Namespace: "default", Name: "vm-gpu", Node: "worker-2", Phase: "Running", Strategy: disruption.StrategyLiveMigrate, Condition: true, Reason: "HostDeviceNotLiveMigratable"}
	for _, tc := range []struct {
		name       string
		pool       unstructured.Unstructured
		updated    string // what worker-2 runs
		missing    bool   // rendered-b is not there
		wantErr    string
		wantVMs    []string
		wantNoLook bool
	}{
		{name: "nothing to roll out: no look", pool: pool("rendered-a", "rendered-a"), updated: "rendered-a", wantNoLook: true},
		{name: "kernel arguments change: a reboot, the VM that cannot migrate blocks", pool: pool("rendered-b", "rendered-a"), updated: "rendered-a",
			wantVMs: []string{"default/vm-gpu BlocksDrain"}},
		{name: "the VM's node runs the new config already: not drained again", pool: pool("rendered-b", "rendered-a"), updated: "rendered-b"},
		{name: "the new rendered config is not there: an error, no guess", pool: pool("rendered-b", "rendered-a"), updated: "rendered-a", missing: true,
			wantErr: "the rendered MachineConfig 'rendered-b' of MachineConfigPool 'worker' does not exist"},
		{name: "what the nodes run is not reported: an error", pool: pool("rendered-b", ""), updated: "rendered-a",
			wantErr: "MachineConfigPool 'worker' reports no status.configuration.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{objects: map[cluster.ObjectKey]*unstructured.Unstructured{}, pools: []unstructured.Unstructured{tc.pool},
				nodes: []unstructured.Unstructured{node("worker-0", "rendered-a"), node("worker-1", "rendered-a"), node("worker-2", tc.updated)},
				vmis:  []kubevirt.VMI{gpu}, unserved: map[string]bool{"MachineConfiguration": true}}
			mcs := []*unstructured.Unstructured{rendered("rendered-a")}
			if !tc.missing {
				mcs = append(mcs, rendered("rendered-b", "psi=1"))
			}
			for _, mc := range mcs {
				c.objects[cluster.ObjectKey{GVK: machineconfig.MachineConfigGVK, Name: mc.GetName()}] = mc
			}
			e := &Engine{Cluster: c}
			reboots, err := e.PendingDrainImpact(context.Background(), &tc.pool)
			if tc.wantErr != "" || err != nil {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || tc.wantErr == "" {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if tc.wantNoLook {
				if reboots != nil || c.requests["list VirtualMachineInstance"] != 0 {
					t.Errorf("reboots %+v, VMI lists %d; want no look", reboots, c.requests["list VirtualMachineInstance"])
				}
				return
			}
			if len(reboots) != 1 || reboots[0].Disruption != v1alpha1.NodeDisruptionReboot || !reboots[0].Drains {
				t.Fatalf("reboots %+v, want the worker pool rebooted and drained", reboots)
			}
			var vms []string
			for _, v := range reboots[0].VMImpacts {
				vms = append(vms, v.Namespace+"/"+v.Name+" "+string(v.Fate))
			}
			if strings.Join(vms, ",") != strings.Join(tc.wantVMs, ",") {
				t.Errorf("VMs %v, want %v", vms, tc.wantVMs)
			}
			if c.requests["list VirtualMachineInstance"] != 1 {
				t.Errorf("VMI lists %d, want one live list", c.requests["list VirtualMachineInstance"])
			}
		})
	}
}
