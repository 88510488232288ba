package disruption

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

func node(name string, labels map[string]string, annotations map[string]string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node"}}
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func pool(name string, nodeLabel string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{"nodeSelector": map[string]interface{}{
			"matchLabels": map[string]interface{}{nodeLabel: ""}}},
	}}
}

var (
	worker = map[string]string{WorkerRoleLabel: ""}
	cnv    = map[string]string{WorkerRoleLabel: "", "node-role.kubernetes.io/worker-cnv": ""}
	master = map[string]string{"node-role.kubernetes.io/master": ""}
)

func running(ns, name, node, strategy string, migratable bool, reason string) kubevirt.VMI {
	return kubevirt.VMI{Namespace: ns, Name: name, Node: node, Phase: "Running", Strategy: strategy, Condition: true, Migratable: migratable, Reason: reason}
}

// The four VMIs of the e2e spec on three worker nodes.
func e2eVMIs() []kubevirt.VMI {
	return []kubevirt.VMI{
		running("default", "migratable", "worker-0", StrategyLiveMigrate, true, ""),
		running("default", "vm-none", "worker-1", StrategyNone, true, ""),
		running("default", "disk-0", "worker-1", StrategyLiveMigrateIfPossible, false, "DisksNotLiveMigratable"),
		running("default", "gpu-0", "worker-2", StrategyLiveMigrate, false, "HostDeviceNotLiveMigratable"),
		// Neither ended VMIs nor VMIs of other nodes count.
		{Namespace: "default", Name: "done", Node: "worker-0", Phase: "Succeeded", Strategy: StrategyNone},
		running("default", "on-master", "master-0", StrategyNone, true, ""),
		running("default", "pending", "", StrategyNone, true, ""),
	}
}

func threeWorkers() []unstructured.Unstructured {
	return []unstructured.Unstructured{node("worker-0", worker, nil), node("worker-1", worker, nil), node("worker-2", worker, nil), node("master-0", master, nil)}
}

func TestAssess(t *testing.T) {
	reboot := Decision{Action: v1alpha1.NodeDisruptionReboot, Reason: "kernelArguments changed: always a reboot"}
	workerPool := pool("worker", WorkerRoleLabel)
	tests := []struct {
		name     string
		cluster  Cluster
		decision Decision
		drains   bool
		vms      []v1alpha1.VMImpact
		summary  string
		unknown  string
	}{
		{
			name:     "a reboot drains: each running VM of the pool's nodes with its fate",
			cluster:  Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: e2eVMIs(), Default: Default{Strategy: StrategyLiveMigrate}},
			decision: reboot, drains: true,
			vms: []v1alpha1.VMImpact{
				{Node: "worker-0", Namespace: "default", Name: "migratable", Fate: v1alpha1.VMFateLiveMigrate},
				{Node: "worker-1", Namespace: "default", Name: "disk-0", Fate: v1alpha1.VMFateShutDown, Reason: "DisksNotLiveMigratable"},
				{Node: "worker-1", Namespace: "default", Name: "vm-none", Fate: v1alpha1.VMFateShutDown, Reason: ReasonStrategyNone},
				{Node: "worker-2", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"},
			},
			summary: "1 VM live-migrates, 2 shut down: default/disk-0 (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone); 1 blocks the drain: default/gpu-0 (HostDeviceNotLiveMigratable)",
		},
		{
			name:     "a node disruption policy that does not drain: no VM is affected",
			cluster:  Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: e2eVMIs()},
			decision: Decision{Action: v1alpha1.NodeDisruptionNone, Reason: "node disruption policies: None for /etc/x"},
			summary:  "not drained: no VM is affected",
		},
		{
			name:     "Restart does not drain",
			cluster:  Cluster{Nodes: threeWorkers(), VMIs: e2eVMIs()},
			decision: Decision{Action: v1alpha1.NodeDisruptionRestart},
			summary:  "not drained: no VM is affected",
		},
		{
			name:     "Drain drains",
			cluster:  Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: []kubevirt.VMI{running("a", "b", "worker-0", StrategyNone, true, "")}},
			decision: Decision{Action: v1alpha1.NodeDisruptionDrain}, drains: true,
			vms:     []v1alpha1.VMImpact{{Node: "worker-0", Namespace: "a", Name: "b", Fate: v1alpha1.VMFateShutDown, Reason: ReasonStrategyNone}},
			summary: "1 VM shuts down: a/b (EvictionStrategyNone)",
		},
		{
			name:     "a single-node cluster is not drained",
			cluster:  Cluster{Nodes: []unstructured.Unstructured{node("sno", worker, map[string]string{TopologyAnnotation: "SingleReplica"})}, VMIs: []kubevirt.VMI{running("a", "b", "sno", StrategyNone, true, "")}},
			decision: reboot,
			summary:  "not drained (single-node cluster): no VM is evicted; the VMs there stop while the node reboots",
		},
		{
			name:     "one Node is a single-node cluster too",
			cluster:  Cluster{Nodes: []unstructured.Unstructured{node("sno", worker, nil)}},
			decision: Decision{Action: v1alpha1.NodeDisruptionDrain},
			summary:  "not drained (single-node cluster): no VM is affected",
		},
		{
			name:     "no VMI API: unknown",
			cluster:  Cluster{Nodes: threeWorkers(), VMIsUnknown: VMIsNotServed},
			decision: reboot, drains: true,
			summary: "VM impact unknown: kubevirt.io/v1 VirtualMachineInstance not served", unknown: VMIsNotServed,
		},
		{
			name:     "Nodes not readable: unknown",
			cluster:  Cluster{NodesUnknown: "cannot list Nodes: forbidden", VMIs: e2eVMIs()},
			decision: reboot, drains: true,
			summary: "VM impact unknown: cannot list Nodes: forbidden", unknown: "cannot list Nodes: forbidden",
		},
		{
			name: "a paused rollout resumes: a node already on its rendered config is not drained again",
			cluster: Cluster{Pools: []unstructured.Unstructured{workerPool}, UpdatedTo: "rendered-worker-b", VMIs: e2eVMIs(), Default: Default{Strategy: StrategyLiveMigrate},
				Nodes: []unstructured.Unstructured{node("worker-0", worker, map[string]string{CurrentConfigAnnotation: "rendered-worker-a"}),
					node("worker-1", worker, map[string]string{CurrentConfigAnnotation: "rendered-worker-a"}),
					node("worker-2", worker, map[string]string{CurrentConfigAnnotation: "rendered-worker-b"}), node("master-0", master, nil)}},
			decision: reboot, drains: true,
			vms: []v1alpha1.VMImpact{
				{Node: "worker-0", Namespace: "default", Name: "migratable", Fate: v1alpha1.VMFateLiveMigrate},
				{Node: "worker-1", Namespace: "default", Name: "disk-0", Fate: v1alpha1.VMFateShutDown, Reason: "DisksNotLiveMigratable"},
				{Node: "worker-1", Namespace: "default", Name: "vm-none", Fate: v1alpha1.VMFateShutDown, Reason: ReasonStrategyNone},
			},
			summary: "1 VM live-migrates, 2 shut down: default/disk-0 (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone)",
		},
		{
			name:     "no VM on the pool's nodes",
			cluster:  Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: []kubevirt.VMI{running("a", "b", "master-0", StrategyNone, true, "")}},
			decision: reboot, drains: true,
			summary: "no VM runs on its nodes",
		},
		{
			name: "a node of a custom pool is not the worker pool's",
			cluster: Cluster{Pools: []unstructured.Unstructured{workerPool, pool("worker-cnv", "node-role.kubernetes.io/worker-cnv")},
				Nodes: []unstructured.Unstructured{node("worker-0", worker, nil), node("cnv-0", cnv, nil)},
				VMIs:  []kubevirt.VMI{running("a", "on-cnv", "cnv-0", StrategyNone, true, ""), running("a", "on-worker", "worker-0", StrategyLiveMigrate, true, "")}},
			decision: reboot, drains: true,
			vms:     []v1alpha1.VMImpact{{Node: "worker-0", Namespace: "a", Name: "on-worker", Fate: v1alpha1.VMFateLiveMigrate}},
			summary: "1 VM live-migrates",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := v1alpha1.PoolReboot{Pool: "worker", Nodes: 3}
			tc.cluster.Assess(&r, &workerPool, tc.decision)
			if r.Disruption != tc.decision.Action || r.Drains != tc.drains || r.VMSummary != tc.summary || r.VMImpactUnknown != tc.unknown {
				t.Errorf("got disruption %s, drains %t, summary %q, unknown %q; want %s, %t, %q, %q",
					r.Disruption, r.Drains, r.VMSummary, r.VMImpactUnknown, tc.decision.Action, tc.drains, tc.summary, tc.unknown)
			}
			if !reflect.DeepEqual(r.VMImpacts, tc.vms) {
				t.Errorf("vms\n got %+v\nwant %+v", r.VMImpacts, tc.vms)
			}
		})
	}
}

func impacts(migrate, shut, block int) []v1alpha1.VMImpact {
	var out []v1alpha1.VMImpact
	add := func(n int, prefix string, fate v1alpha1.VMFate, reason string) {
		for i := 0; i < n; i++ {
			out = append(out, v1alpha1.VMImpact{Node: "n", Namespace: "default", Name: prefix + string(rune('a'+i)), Fate: fate, Reason: reason})
		}
	}
	add(migrate, "m-", v1alpha1.VMFateLiveMigrate, "")
	add(shut, "s-", v1alpha1.VMFateShutDown, ReasonStrategyNone)
	add(block, "gpu-", v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable")
	return out
}

// migrating counts the VMs of vms that live-migrate.
func migrating(vms []v1alpha1.VMImpact) int {
	n := 0
	for _, v := range vms {
		if v.Fate == v1alpha1.VMFateLiveMigrate {
			n++
		}
	}
	return n
}

// A pool of thousands of VMs lists, once bound, those at risk and a few
// that migrate, and counts the rest.
func TestAssessListsEveryVMAtRiskAndTheFirstMigrations(t *testing.T) {
	var vmis []kubevirt.VMI
	for i := 0; i < 3*MaxListedMigrations; i++ {
		// Added in reverse so that the order kept is the sort's, not the input's.
		vmis = append(vmis, running("default", fmt.Sprintf("vm-%03d", 3*MaxListedMigrations-i), "worker-1", StrategyLiveMigrate, true, ""))
	}
	vmis = append(vmis, running("default", "zz-none", "worker-2", StrategyNone, true, ""))
	workerPool := pool("worker", WorkerRoleLabel)
	c := Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: vmis}
	r := v1alpha1.PoolReboot{Pool: "worker", Nodes: 3}
	c.Assess(&r, &workerPool, Decision{Action: v1alpha1.NodeDisruptionReboot})
	if len(r.VMImpacts) != 3*MaxListedMigrations+1 {
		t.Fatalf("Assess lists %d VMs, want all %d", len(r.VMImpacts), 3*MaxListedMigrations+1)
	}
	Bound(&r)
	if r.LiveMigrations != int64(3*MaxListedMigrations) {
		t.Errorf("liveMigrations = %d, want %d", r.LiveMigrations, 3*MaxListedMigrations)
	}
	if len(r.VMImpacts) != MaxListedMigrations+1 {
		t.Fatalf("%d VMs listed, want %d", len(r.VMImpacts), MaxListedMigrations+1)
	}
	if first, last := r.VMImpacts[0].Name, r.VMImpacts[MaxListedMigrations-1].Name; first != "vm-001" || last != fmt.Sprintf("vm-%03d", MaxListedMigrations) {
		t.Errorf("listed migrations %s…%s, want the first %d by name", first, last, MaxListedMigrations)
	}
	if at := r.VMImpacts[MaxListedMigrations]; at.Name != "zz-none" || at.Fate != v1alpha1.VMFateShutDown {
		t.Errorf("the VM at risk is not listed: %+v", at)
	}
	if want := fmt.Sprintf("%d VMs live-migrate, 1 shuts down: default/zz-none (EvictionStrategyNone)", 3*MaxListedMigrations); r.VMSummary != want {
		t.Errorf("summary %q, want %q", r.VMSummary, want)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		vms  []v1alpha1.VMImpact
		want string
	}{
		{"none", nil, ""},
		{"only migrations", impacts(14, 0, 0), "14 VMs live-migrate"},
		{"one migration", impacts(1, 0, 0), "1 VM live-migrates"},
		{"the issue's example", impacts(14, 1, 2), "14 VMs live-migrate, 1 shuts down: default/s-a (EvictionStrategyNone); 2 block the drain: default/gpu-a (HostDeviceNotLiveMigratable), default/gpu-b (HostDeviceNotLiveMigratable)"},
		{"only blockers", impacts(0, 0, 1), "1 VM blocks the drain: default/gpu-a (HostDeviceNotLiveMigratable)"},
		{"only shut down", impacts(0, 2, 0), "2 VMs shut down: default/s-a (EvictionStrategyNone), default/s-b (EvictionStrategyNone)"},
		{"many are cut short", impacts(0, 7, 0), "7 VMs shut down: default/s-a (EvictionStrategyNone), default/s-b (EvictionStrategyNone), default/s-c (EvictionStrategyNone), default/s-d (EvictionStrategyNone), default/s-e (EvictionStrategyNone), … (2 more)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(migrating(tc.vms), tc.vms); got != tc.want {
				t.Errorf("Summarize\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestNote(t *testing.T) {
	drained := func(pool string, nodes int64, vms []v1alpha1.VMImpact) v1alpha1.PoolReboot {
		return v1alpha1.PoolReboot{Pool: pool, Nodes: nodes, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: vms, LiveMigrations: int64(migrating(vms))}
	}
	tests := []struct {
		name    string
		reboots []v1alpha1.PoolReboot
		want    string
	}{
		{"no VM: as before", []v1alpha1.PoolReboot{drained("worker", 3, nil)}, "reboots: pool worker, 3 nodes, once"},
		{"VMs", []v1alpha1.PoolReboot{drained("worker", 3, impacts(14, 1, 2))},
			"reboots: pool worker, 3 nodes, once; 14 VMs live-migrate, 1 shuts down: default/s-a (EvictionStrategyNone); 2 block the drain: default/gpu-a (HostDeviceNotLiveMigratable), default/gpu-b (HostDeviceNotLiveMigratable)"},
		{"two pools: their VMs summed", []v1alpha1.PoolReboot{drained("worker", 3, impacts(2, 0, 0)), {Pool: "worker-cnv", Nodes: 1, Paused: true, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: impacts(1, 0, 0), LiveMigrations: 1}},
			"reboots: pool worker, 3 nodes, once; pool worker-cnv, 1 node, once, when the pool is unpaused; 3 VMs live-migrate"},
		{"unknown", []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpactUnknown: VMIsNotServed}},
			"reboots: pool worker, 3 nodes, once; VM impact unknown: kubevirt.io/v1 VirtualMachineInstance not served"},
		{"no drain", []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionNone, DisruptionReason: "node disruption policies: None for /etc/x", VMSummary: "not drained: no VM is affected"}},
			"reboots: none; pool worker, 3 nodes: not drained, None (node disruption policies: None for /etc/x); not drained: no VM is affected"},
		{"drain only", []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionDrain, DisruptionReason: "node disruption policies: Drain for /etc/x", Drains: true, VMImpacts: impacts(1, 0, 0), LiveMigrations: 1}},
			"reboots: none; drains: pool worker, 3 nodes, once (node disruption policies: Drain for /etc/x); 1 VM live-migrates"},
		{"single node", []v1alpha1.PoolReboot{{Pool: "master", Nodes: 1, Disruption: v1alpha1.NodeDisruptionReboot, VMSummary: "not drained (single-node cluster): no VM is evicted; the VMs there stop while the node reboots"}},
			"reboots: pool master, 1 node, once; not drained (single-node cluster): no VM is evicted; the VMs there stop while the node reboots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Note(tc.reboots); got != tc.want {
				t.Errorf("Note\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWarning(t *testing.T) {
	r := []v1alpha1.PoolReboot{{Pool: "worker", Drains: true, VMImpacts: impacts(3, 1, 1)}}
	got := Warning("enable-psi-metrics", Disrupted(r), false)
	for _, want := range []string{"item 'enable-psi-metrics': draining the nodes shuts down 1 VM: default/s-a (shuts down, EvictionStrategyNone, pool worker)",
		"would block on 1 VM: default/gpu-a (blocks the drain, HostDeviceNotLiveMigratable, pool worker)", "waits, unwritten, until no VM blocks"} {
		if !strings.Contains(got, want) {
			t.Errorf("warning %q lacks %q", got, want)
		}
	}
	many := Warning("x", Disrupted([]v1alpha1.PoolReboot{{Pool: "worker", Drains: true, VMImpacts: impacts(0, 7, 0)}}), false)
	if want := "shuts down 7 VMs: default/s-a (shuts down, EvictionStrategyNone, pool worker), default/s-b (shuts down, EvictionStrategyNone, pool worker), " +
		"default/s-c (shuts down, EvictionStrategyNone, pool worker), default/s-d (shuts down, EvictionStrategyNone, pool worker), " +
		"default/s-e (shuts down, EvictionStrategyNone, pool worker), … (2 more)"; !strings.Contains(many, want) {
		t.Errorf("warning %q lacks %q", many, want)
	}
	if got := Warning("x", Disrupted(r), true); !strings.Contains(got, "is written anyway (spec.rollout.allowBlockingDrains: true)") {
		t.Errorf("with the opt-out: %q", got)
	}
	if got := Warning("x", Disrupted([]v1alpha1.PoolReboot{{Pool: "worker", Drains: true, VMImpacts: impacts(3, 0, 0)}}), false); got != "" {
		t.Errorf("only migrations warn: %q", got)
	}
}

func TestUnreviewed(t *testing.T) {
	vm := func(pool, name string, fate v1alpha1.VMFate, reason string) v1alpha1.DisruptedVM {
		return v1alpha1.DisruptedVM{Pool: pool, Namespace: "default", Name: name, Fate: fate, Reason: reason}
	}
	reviewed := []v1alpha1.DisruptedVM{vm("worker", "gpu-0", v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable"), vm("worker", "vm-none", v1alpha1.VMFateShutDown, ReasonStrategyNone)}
	tests := []struct {
		name string
		now  []v1alpha1.DisruptedVM
		want []v1alpha1.DisruptedVM
	}{
		{"as reviewed", reviewed, nil},
		{"fewer: fine", reviewed[1:], nil},
		{"none left", nil, nil},
		{"another reason for the same fate: fine", []v1alpha1.DisruptedVM{vm("worker", "gpu-0", v1alpha1.VMFateBlocksDrain, "DisksNotLiveMigratable")}, nil},
		{"a VM became non-migratable", append([]v1alpha1.DisruptedVM{vm("worker", "db-0", v1alpha1.VMFateBlocksDrain, "DisksNotLiveMigratable")}, reviewed...),
			[]v1alpha1.DisruptedVM{vm("worker", "db-0", v1alpha1.VMFateBlocksDrain, "DisksNotLiveMigratable")}},
		{"another fate", []v1alpha1.DisruptedVM{vm("worker", "vm-none", v1alpha1.VMFateBlocksDrain, ReasonExternal)},
			[]v1alpha1.DisruptedVM{vm("worker", "vm-none", v1alpha1.VMFateBlocksDrain, ReasonExternal)}},
		{"another pool", []v1alpha1.DisruptedVM{vm("worker-cnv", "gpu-0", v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable")},
			[]v1alpha1.DisruptedVM{vm("worker-cnv", "gpu-0", v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unreviewed(reviewed, tc.now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Unreviewed = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDisruptedAndBlocking(t *testing.T) {
	r := []v1alpha1.PoolReboot{
		{Pool: "worker-cnv", VMImpacts: impacts(1, 1, 0)},
		{Pool: "worker", VMImpacts: impacts(2, 0, 1)},
	}
	got := Disrupted(r)
	want := []v1alpha1.DisruptedVM{
		{Pool: "worker", Namespace: "default", Name: "gpu-a", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"},
		{Pool: "worker-cnv", Namespace: "default", Name: "s-a", Fate: v1alpha1.VMFateShutDown, Reason: ReasonStrategyNone},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Disrupted = %+v, want %+v", got, want)
	}
	if b := Blocking(r); !reflect.DeepEqual(b, want[:1]) {
		t.Errorf("Blocking = %+v", b)
	}
	msg := BlockedMessage("99-worker-psi-karg", want[:1])
	if want := "writing MachineConfig '99-worker-psi-karg' would drain nodes that run a VM that would block the drain: default/gpu-a (HostDeviceNotLiveMigratable, pool worker); migrate, stop, or change its eviction strategy (or set spec.rollout.allowBlockingDrains: true to write it anyway); the change is written when no VM blocks"; msg != want {
		t.Errorf("BlockedMessage\n got %q\nwant %q", msg, want)
	}
}

func TestUpgradeInProgress(t *testing.T) {
	cv := func(conds ...interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"metadata": map[string]interface{}{"name": "version"},
			"status":   map[string]interface{}{"conditions": conds}}}
	}
	cond := func(typ, status, reason, msg string) interface{} {
		return map[string]interface{}{"type": typ, "status": status, "reason": reason, "message": msg}
	}
	tests := []struct {
		name string
		cv   *unstructured.Unstructured
		want string
	}{
		{"no ClusterVersion", nil, ""},
		{"no conditions", cv(), ""},
		{"settled", cv(cond("Available", "True", "", ""), cond("Progressing", "False", "", "Cluster version is 4.20.1")), ""},
		{"updating", cv(cond("Progressing", "True", "", "Working towards 4.20.2: 512 of 903 done (56% complete)")),
			"cluster upgrade in progress (ClusterVersion version Progressing: Working towards 4.20.2: 512 of 903 done (56% complete)); the change is written when it is done"},
		{"no message: the reason", cv(cond("Progressing", "True", "ClusterOperatorUpdating", "")),
			"cluster upgrade in progress (ClusterVersion version Progressing: ClusterOperatorUpdating); the change is written when it is done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UpgradeInProgress(tc.cv); got != tc.want {
				t.Errorf("UpgradeInProgress = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAssessOrdersByNode: VMIs as a cache serves them (by namespace and
// name) and in any other order are listed by node, namespace and name.
func TestAssessOrdersByNode(t *testing.T) {
	sorted := []kubevirt.VMI{
		running("a", "vm-1", "worker-2", StrategyNone, true, ""),
		running("a", "vm-2", "worker-0", StrategyNone, true, ""),
		running("b", "vm-0", "worker-2", StrategyNone, true, ""),
		running("b", "vm-3", "worker-0", StrategyNone, true, ""),
		running("c", "vm-4", "worker-1", StrategyNone, true, ""),
	}
	want := []string{"worker-0 a/vm-2", "worker-0 b/vm-3", "worker-1 c/vm-4", "worker-2 a/vm-1", "worker-2 b/vm-0"}
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	for name, vmis := range map[string][]kubevirt.VMI{"by namespace and name": sorted, "reversed": reversed} {
		t.Run(name, func(t *testing.T) {
			workerPool := pool("worker", WorkerRoleLabel)
			c := Cluster{Pools: []unstructured.Unstructured{workerPool}, Nodes: threeWorkers(), VMIs: vmis}
			r := v1alpha1.PoolReboot{Pool: "worker", Nodes: 3}
			c.Assess(&r, &workerPool, Decision{Action: v1alpha1.NodeDisruptionReboot})
			var got []string
			for _, v := range r.VMImpacts {
				got = append(got, v.Node+" "+v.Namespace+"/"+v.Name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("listed %v, want %v", got, want)
			}
		})
	}
}
