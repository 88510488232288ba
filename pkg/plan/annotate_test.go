package plan

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

func testPool(name string, roles []interface{}, machines int64, paused bool) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{"paused": paused, "machineConfigSelector": map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}},
			"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + name: ""}}},
		"status": map[string]interface{}{"machineCount": machines},
	}}
}

func testNode(name string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node"}}
	u.SetName(name)
	u.SetLabels(map[string]string{"node-role.kubernetes.io/worker": ""})
	return u
}

// fakeReads serves the disruption reads from memory.
func fakeReads(nodes []unstructured.Unstructured, vmis []unstructured.Unstructured, served bool, vmiErr error, policies *disruption.Policies) *clusterReads {
	return &clusterReads{
		nodes: func() ([]unstructured.Unstructured, error) { return nodes, nil },
		vmis: func() ([]kubevirt.VMI, bool, error) {
			out := make([]kubevirt.VMI, len(vmis))
			for i := range vmis {
				out[i] = kubevirt.ReadVMI(&vmis[i])
			}
			return out, served, vmiErr
		},
		policies: func() (*disruption.Policies, string, error) {
			return policies, "there is no MachineConfiguration 'cluster'", nil
		},
		hco: func() (*unstructured.Unstructured, error) { return nil, nil },
	}
}

var (
	psiSpec  = map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}
	swapSpec = map[string]interface{}{"config": map[string]interface{}{"storage": map[string]interface{}{"files": []interface{}{
		map[string]interface{}{"path": "/etc/find-swap-partition", "mode": int64(493)}}}}}
	workerLabels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
	workers      = []unstructured.Unstructured{testNode("worker-0"), testNode("worker-1"), testNode("worker-2")}
	e2eVMIs      = []unstructured.Unstructured{
		clustertest.VMI("migratable", "worker-0", "LiveMigrate", "True", ""),
		clustertest.VMI("vm-none", "worker-1", "None", "True", ""),
		clustertest.VMI("disk-0", "worker-1", "LiveMigrateIfPossible", "False", "DisksNotLiveMigratable"),
		clustertest.VMI("gpu-0", "worker-2", "LiveMigrate", "False", "HostDeviceNotLiveMigratable"),
	}
)

// Every operation that rolls a pool gets its note: a Delete has no
// desired state, the pools that select the live object's labels roll its
// removal. What the drain does to the VMs is added, warned about and
// returned for the hash.
func TestRebootNotes(t *testing.T) {
	pools := []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false)}
	mc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"}
	noneForSwap, _ := disruption.ReadPolicies(&unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "cluster"},
		"status": map[string]interface{}{"nodeDisruptionPolicyStatus": map[string]interface{}{"clusterPolicies": map[string]interface{}{
			"files": []interface{}{map[string]interface{}{"path": "/etc/find-swap-partition", "actions": []interface{}{map[string]interface{}{"type": "None"}}}}}}}}})
	tests := []struct {
		name      string
		op        v1alpha1.Operation
		change    mcChange
		reads     *clusterReads
		message   string
		warning   string
		disrupted []string
	}{
		{name: "create, no VM", op: v1alpha1.OperationCreate, change: mcChange{after: psiSpec},
			reads: fakeReads(workers, nil, true, nil, nil), message: "m; reboots: pool worker, 3 nodes, once"},
		{name: "update, no VM", op: v1alpha1.OperationUpdate, change: mcChange{before: map[string]interface{}{}, after: psiSpec},
			reads: fakeReads(workers, nil, true, nil, nil), message: "m; reboots: pool worker, 3 nodes, once"},
		{name: "delete, no VM", op: v1alpha1.OperationDelete, change: mcChange{before: psiSpec},
			reads: fakeReads(workers, nil, true, nil, nil), message: "m; reboots: pool worker, 3 nodes, once"},
		{name: "the four VMs of the e2e spec", op: v1alpha1.OperationCreate, change: mcChange{after: psiSpec},
			reads: fakeReads(workers, e2eVMIs, true, nil, nil),
			message: "m; reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 2 shut down: default/disk-0 (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone); " +
				"1 blocks the drain: default/gpu-0 (HostDeviceNotLiveMigratable)",
			warning:   "item 'enable-psi-metrics': draining the nodes shuts down 2 VMs",
			disrupted: []string{"default/disk-0 ShutDown", "default/gpu-0 BlocksDrain", "default/vm-none ShutDown"}},
		{name: "a policy that does not drain: no VM affected, no warning", op: v1alpha1.OperationCreate, change: mcChange{after: swapSpec},
			reads:   fakeReads(workers, e2eVMIs, true, nil, noneForSwap),
			message: "m; reboots: none; pool worker, 3 nodes: not drained, None (node disruption policies: None for /etc/find-swap-partition); not drained: no VM is affected"},
		{name: "the same change without policies reboots", op: v1alpha1.OperationCreate, change: mcChange{after: swapSpec},
			reads: fakeReads(workers, nil, true, nil, nil), message: "m; reboots: pool worker, 3 nodes, once"},
		{name: "no VMI API: unknown, never a failure", op: v1alpha1.OperationCreate, change: mcChange{after: psiSpec},
			reads: fakeReads(workers, nil, false, nil, nil), message: "m; reboots: pool worker, 3 nodes, once; VM impact unknown: kubevirt.io/v1 VirtualMachineInstance not served"},
		{name: "VMIs not readable: unknown", op: v1alpha1.OperationCreate, change: mcChange{after: psiSpec},
			reads: fakeReads(workers, nil, false, errors.New("forbidden"), nil), message: "m; reboots: pool worker, 3 nodes, once; VM impact unknown: cannot list VirtualMachineInstances: forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := []v1alpha1.PlanItem{{Name: "enable-psi-metrics", TargetRef: mc, Operation: tc.op, Message: "m"}}
			n := notes{pools: func() ([]unstructured.Unstructured, error) { return pools, nil }, reads: tc.reads}
			warnings, disrupted := n.annotate(context.Background(), items, []itemChange{{rolls: machineconfig.Change{Name: "99-worker-psi-karg", Labels: workerLabels}, spec: tc.change}})
			if items[0].Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", items[0].Message, tc.message)
			}
			if len(items[0].Reboots) != 1 || items[0].Reboots[0].Pool != "worker" || items[0].Reboots[0].Nodes != 3 {
				t.Errorf("reboots %+v", items[0].Reboots)
			}
			if tc.warning == "" && len(warnings) > 0 || tc.warning != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.warning)) {
				t.Errorf("warnings %q, want one starting %q", warnings, tc.warning)
			}
			var got []string
			for _, v := range disrupted["enable-psi-metrics"] {
				got = append(got, v.Namespace+"/"+v.Name+" "+string(v.Fate))
			}
			if !reflect.DeepEqual(got, tc.disrupted) {
				t.Errorf("disrupted %q, want %q", got, tc.disrupted)
			}
		})
	}
}

type windowList []*maintenance.Window

func (l windowList) Windows(context.Context) ([]*maintenance.Window, error) { return l, nil }

// listed is the list as the plan's notes read it, once per plan.
func (l windowList) listed() ([]*maintenance.Window, error) { return l, nil }

// The plan says when a MachineConfig item would be written: pools no window
// selects say nothing.
func TestWindowNotes(t *testing.T) {
	pools := []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false), testPool("master", []interface{}{"master"}, 3, false)}
	weekend, err := maintenance.New("weekend", maintenance.Spec{PoolNames: []string{"worker"}, Schedule: "0 22 * * 6", Duration: 8 * time.Hour, TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	wednesday := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		pool string
		now  time.Time
		want string
	}{
		{"closed: written when it opens", "worker", wednesday, "m; maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov 22:00 UTC, in 3d12h; it is written then"},
		{"open: until when", "worker", time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC), "m; maintenance windows: pool 'worker': window 'weekend' is open until Sun 29 Nov 06:00 UTC, in 7h"},
		{"a pool no window selects", "master", wednesday, "m"},
		{"the plan's request ended: unknown, not allowed", "worker", wednesday, "m; maintenance windows: pool 'worker': unknown (the maintenance windows of pool 'worker' (weekend) cannot be evaluated: context canceled; the pool is not disrupted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if strings.Contains(tc.name, "request ended") {
				cancel()
			}
			got := "m" + windowNote(ctx, []v1alpha1.PoolReboot{{Pool: tc.pool, Nodes: 3}}, pools, windowList{weekend}.listed, tc.now)
			if got != tc.want {
				t.Errorf("message %q\nwant    %q", got, tc.want)
			}
		})
	}
}

// The VMs that are shut down or block the drain are part of the plan
// hash; those that migrate are not, and a plan without any hashes as it
// did before VMs were hashed.
func TestPlanHashBindsDisruptedVMs(t *testing.T) {
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Generation: 2, UID: "u"},
		Spec: v1alpha1.VirtPlatformConfigSpec{Profile: "load-aware-rebalancing"}}
	items := []interface{}{map[string]interface{}{"name": "enable-psi-metrics"}}
	snapshot := map[string]interface{}{"k": "v"}
	hash := func(d map[string][]v1alpha1.DisruptedVM) string {
		h, err := hashPlan(cfg, v1alpha1.PlanSettings{Action: "DryRun"}, items, snapshot, d, false)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	legacy, _ := hashJSON(map[string]interface{}{"profile": cfg.Spec.Profile, "generation": cfg.Generation, "uid": cfg.UID,
		"settings": json.RawMessage(`{"action":"DryRun"}`), "items": items, "snapshot": snapshot})
	gpu := v1alpha1.DisruptedVM{Pool: "worker", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"}
	none := v1alpha1.DisruptedVM{Pool: "worker", Namespace: "default", Name: "vm-none", Fate: v1alpha1.VMFateShutDown, Reason: "EvictionStrategyNone"}
	unfit := func(name, why string) map[string][]v1alpha1.DisruptedVM {
		return map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {{Pool: "worker", Namespace: "default", Name: name, Fate: v1alpha1.VMFateBlocksDrain, Reason: ReasonInsufficientCapacity + ": " + why}}}
	}
	tests := []struct {
		name string
		a, b map[string][]v1alpha1.DisruptedVM
		same bool
	}{
		{"no VM disrupted hashes as before", nil, map[string][]v1alpha1.DisruptedVM{}, true},
		{"a VM becomes non-migratable", nil, map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {gpu}}, false},
		{"a new VM with strategy None", map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {gpu}}, map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {gpu, none}}, false},
		{"another reason", map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {gpu}},
			map[string][]v1alpha1.DisruptedVM{"enable-psi-metrics": {{Pool: "worker", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "DisksNotLiveMigratable"}}}, false},
		{"a VM that does not fit, with less room since", unfit("db-0", "64 GiB, 60 GiB free"), unfit("db-0", "64 GiB, 12 GiB free"), true},
		{"another VM that does not fit", unfit("db-0", "64 GiB, 60 GiB free"), unfit("db-1", "64 GiB, 60 GiB free"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (hash(tc.a) == hash(tc.b)) != tc.same {
				t.Errorf("hash(%v) == hash(%v) is %t, want %t", tc.a, tc.b, !tc.same, tc.same)
			}
		})
	}
	if hash(nil) != legacy {
		t.Error("a plan without disrupted VMs hashes differently than before")
	}
}

// One list of Nodes per plan: the profile's reads share the disruption's.
func TestInputReaderSharesPoolAndNodeLists(t *testing.T) {
	calls := map[string]int{}
	r := &inputReader{
		pools: func() ([]unstructured.Unstructured, error) { calls["pools"]++; return nil, nil },
		nodes: func() ([]unstructured.Unstructured, error) { calls["nodes"]++; return nil, nil },
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"},
		{Version: "v1", Kind: "Node"},
	} {
		if _, err := r.List(context.Background(), gvk); err != nil {
			t.Fatal(err)
		}
	}
	if calls["pools"] != 1 || calls["nodes"] != 1 {
		t.Errorf("calls %v", calls)
	}
}

// One pass over the items annotates each MachineConfig item that writes
// with its reboots, the VMs its drains disrupt and its maintenance
// windows; other items are left as they are.
func TestAnnotateInOnePass(t *testing.T) {
	pools := []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false)}
	weekend, err := maintenance.New("weekend", maintenance.Spec{PoolNames: []string{"worker"}, Schedule: "0 22 * * 6", Duration: 8 * time.Hour, TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	mc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"}
	cm := v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}
	listed := func() ([]unstructured.Unstructured, error) { return pools, nil }
	for _, tc := range []struct {
		name      string
		item      v1alpha1.PlanItem
		pools     func() ([]unstructured.Unstructured, error)
		windows   bool
		message   string
		warnings  int
		disrupted int
	}{
		{name: "a MachineConfig written: reboots, VMs, window", item: v1alpha1.PlanItem{Name: "psi", TargetRef: mc, Operation: v1alpha1.OperationCreate, Message: "m"},
			pools: listed, windows: true, warnings: 1, disrupted: 3,
			message: "m; reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 2 shut down: default/disk-0 (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone); " +
				"1 blocks the drain: default/gpu-0 (HostDeviceNotLiveMigratable); maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov 22:00 UTC, in 3d12h; it is written then"},
		{name: "no windows configured: no window note", item: v1alpha1.PlanItem{Name: "psi", TargetRef: mc, Operation: v1alpha1.OperationDelete, Message: "m"},
			pools: listed, warnings: 1, disrupted: 3,
			message: "m; reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 2 shut down: default/disk-0 (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone); " +
				"1 blocks the drain: default/gpu-0 (HostDeviceNotLiveMigratable)"},
		{name: "pools not listed: reboots unknown", item: v1alpha1.PlanItem{Name: "psi", TargetRef: mc, Operation: v1alpha1.OperationUpdate, Message: "m"},
			pools: func() ([]unstructured.Unstructured, error) { return nil, errors.New("forbidden") }, windows: true, message: "m; reboots: unknown (forbidden)"},
		{name: "a MachineConfig unchanged", item: v1alpha1.PlanItem{Name: "psi", TargetRef: mc, Operation: v1alpha1.OperationNone, Message: "m"}, pools: listed, windows: true, message: "m"},
		{name: "a MachineConfig that cannot be planned", item: v1alpha1.PlanItem{Name: "psi", TargetRef: mc, Operation: v1alpha1.OperationCreate, Error: "no", Message: "m"},
			pools: listed, windows: true, message: "m"},
		{name: "another kind", item: v1alpha1.PlanItem{Name: "cm", TargetRef: cm, Operation: v1alpha1.OperationCreate, Message: "m"}, pools: listed, windows: true, message: "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := notes{pools: tc.pools, reads: fakeReads(workers, e2eVMIs, true, nil, nil), now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
			if tc.windows {
				n.windows = windowList{weekend}.listed
			}
			items := []v1alpha1.PlanItem{tc.item}
			warnings, disrupted := n.annotate(context.Background(), items, []itemChange{{rolls: machineconfig.Change{Name: "99-worker-psi-karg", Labels: workerLabels}, spec: mcChange{after: psiSpec}}})
			if items[0].Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", items[0].Message, tc.message)
			}
			if len(warnings) != tc.warnings || len(disrupted[tc.item.Name]) != tc.disrupted {
				t.Errorf("%d warnings, %d VMs disrupted; want %d, %d", len(warnings), len(disrupted[tc.item.Name]), tc.warnings, tc.disrupted)
			}
		})
	}
}

// A KubeletConfig rolls the pools its machineConfigPoolSelector selects by
// their labels (not those whose machineConfigSelector selects its labels),
// and what it does to their nodes is decided from the kubelet files of the
// MachineConfig generated from it: a reboot unless a node disruption
// policy covers them.
func TestRebootNotesKubeletConfig(t *testing.T) {
	cnv := testPool("worker-cnv", []interface{}{"worker", "worker-cnv"}, 3, false)
	cnv.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + "worker-cnv": ""})
	worker := testPool("worker", []interface{}{"worker"}, 2, false)
	worker.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + "worker": ""})
	pools := []unstructured.Unstructured{cnv, worker}
	cnvNodes := []unstructured.Unstructured{testNode("cnv-0"), testNode("cnv-1"), testNode("cnv-2")}
	for i := range cnvNodes {
		cnvNodes[i].SetLabels(map[string]string{"node-role.kubernetes.io/worker-cnv": ""})
	}
	kc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "dedicated-cpus"}
	live := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{
			"machineConfigPoolSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + "worker-cnv": ""}},
			"kubeletConfig":             map[string]interface{}{"cpuManagerPolicy": "none"}}}}
	desired := live.DeepCopy()
	_ = unstructured.SetNestedField(desired.Object, "static", "spec", "kubeletConfig", "cpuManagerPolicy")
	kubeletNone, _ := disruption.ReadPolicies(&unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "cluster"},
		"status": map[string]interface{}{"nodeDisruptionPolicyStatus": map[string]interface{}{"clusterPolicies": map[string]interface{}{
			"files": []interface{}{map[string]interface{}{"path": machineconfig.KubeletConfigFile, "actions": []interface{}{map[string]interface{}{"type": "None"}}}}}}}}})
	tests := []struct {
		name    string
		op      v1alpha1.Operation
		before  *unstructured.Unstructured
		after   *unstructured.Unstructured
		reads   *clusterReads
		message string
	}{
		{name: "create: the selected pool reboots", op: v1alpha1.OperationCreate, after: desired,
			reads: fakeReads(cnvNodes, nil, true, nil, nil), message: "m; reboots: pool worker-cnv, 3 nodes, once"},
		{name: "update of cpuManagerPolicy: a reboot", op: v1alpha1.OperationUpdate, before: live, after: desired,
			reads: fakeReads(cnvNodes, nil, true, nil, nil), message: "m; reboots: pool worker-cnv, 3 nodes, once"},
		{name: "delete: the live object's pools", op: v1alpha1.OperationDelete, before: live,
			reads: fakeReads(cnvNodes, nil, true, nil, nil), message: "m; reboots: pool worker-cnv, 3 nodes, once"},
		{name: "a policy that covers kubelet.conf", op: v1alpha1.OperationUpdate, before: live, after: desired,
			reads:   fakeReads(cnvNodes, nil, true, nil, kubeletNone),
			message: "m; reboots: none; pool worker-cnv, 3 nodes: not drained, None (node disruption policies: None for /etc/kubernetes/kubelet.conf); not drained: no VM is affected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rolledBy := tc.after
			if tc.op == v1alpha1.OperationDelete {
				rolledBy = tc.before
			}
			change := itemChange{rolls: machineconfig.ChangeOf(kc, rolledBy.Object),
				spec: mcChange{before: renderedSpecOf(kc, tc.before), after: renderedSpecOf(kc, tc.after)}}
			items := []v1alpha1.PlanItem{{Name: "dedicated-cpus", TargetRef: kc, Operation: tc.op, Message: "m"}}
			n := notes{pools: func() ([]unstructured.Unstructured, error) { return pools, nil }, reads: tc.reads}
			n.annotate(context.Background(), items, []itemChange{change})
			if items[0].Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", items[0].Message, tc.message)
			}
			if len(items[0].Reboots) != 1 || items[0].Reboots[0].Pool != "worker-cnv" || items[0].Reboots[0].Nodes != 3 {
				t.Errorf("reboots = %+v, want pool worker-cnv of 3 nodes", items[0].Reboots)
			}
		})
	}
}
