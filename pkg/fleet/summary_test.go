package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

func TestSummarize(t *testing.T) {
	worker := v1alpha1.PoolReboot{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, LiveMigrations: 7, Capacity: "fits",
		VMImpacts: []v1alpha1.VMImpact{
			{Namespace: "ns", Name: "db", Fate: v1alpha1.VMFateShutDown},
			{Namespace: "ns", Name: "web", Fate: v1alpha1.VMFateLiveMigrate},
			{Namespace: "ns", Name: "gpu", Fate: v1alpha1.VMFateBlocksDrain},
		}}
	res := &plan.Result{Status: v1alpha1.PlanStatus{PlanHash: hash('p'), Items: []v1alpha1.PlanItem{
		{Name: "descheduler", Operation: v1alpha1.OperationUpdate, TargetRef: v1alpha1.ObjectReference{Kind: "KubeDescheduler", Name: "cluster"}},
		// Two items rolling the same pool count its nodes and VMs once.
		{Name: "psi", Operation: v1alpha1.OperationCreate, TargetRef: v1alpha1.ObjectReference{Kind: "MachineConfig", Name: "99-psi"}, Reboots: []v1alpha1.PoolReboot{worker}},
		{Name: "swap", Operation: v1alpha1.OperationCreate, TargetRef: v1alpha1.ObjectReference{Kind: "MachineConfig", Name: "99-swap"}, Reboots: []v1alpha1.PoolReboot{worker,
			// A pool that only reloads a service is not drained.
			{Pool: "infra", Nodes: 2, Disruption: v1alpha1.NodeDisruptionReload}}},
	}}}
	got := Summarize(res, hash('s'))
	want := &v1alpha1.PlanSummary{PlanHash: hash('p'), SpecHash: hash('s'),
		Items: []v1alpha1.PlanSummaryItem{
			{Name: "descheduler", Target: "KubeDescheduler/cluster", Operation: v1alpha1.OperationUpdate},
			{Name: "psi", Target: "MachineConfig/99-psi", Operation: v1alpha1.OperationCreate},
			{Name: "swap", Target: "MachineConfig/99-swap", Operation: v1alpha1.OperationCreate},
		},
		NodeReboots: 3, LiveMigrations: 7, ShutDownVMs: 1, DrainBlockingVMs: 1, Capacity: "pool worker: fits"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}
