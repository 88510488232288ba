package machineconfig

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

var (
	kcRef = v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "dedicated-cpus"}
	mcRef = v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-psi"}
)

func labeledPool(name string, poolLabels map[string]interface{}, selector map[string]interface{}) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "labels": poolLabels},
		"spec":     map[string]interface{}{"machineConfigSelector": selector},
	}}
	return u
}

func kubeletConfig(selector map[string]interface{}) map[string]interface{} {
	spec := map[string]interface{}{"kubeletConfig": map[string]interface{}{"cpuManagerPolicy": "static"}}
	if selector != nil {
		spec["machineConfigPoolSelector"] = selector
	}
	return map[string]interface{}{"metadata": map[string]interface{}{"name": "dedicated-cpus"}, "spec": spec}
}

func TestRolledPools(t *testing.T) {
	role := func(roles ...interface{}) map[string]interface{} {
		return map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{"key": RoleLabel, "operator": "In", "values": roles}}}
	}
	pools := []unstructured.Unstructured{
		labeledPool("worker-cnv", map[string]interface{}{PoolLabelPrefix + "worker-cnv": ""}, role("worker", "worker-cnv")),
		labeledPool("worker", map[string]interface{}{PoolLabelPrefix + "worker": "", "custom-kubelet": "large"}, role("worker")),
		labeledPool("master", map[string]interface{}{PoolLabelPrefix + "master": ""}, role("master")),
	}
	byPool := func(pool string) map[string]interface{} {
		return map[string]interface{}{"matchLabels": map[string]interface{}{PoolLabelPrefix + pool: ""}}
	}
	tests := []struct {
		name     string
		ref      v1alpha1.ObjectReference
		obj      map[string]interface{}
		want     []string
		wantHint string
		wantErr  string
	}{
		{name: "KubeletConfig by the pool label", ref: kcRef, obj: kubeletConfig(byPool("worker-cnv")), want: []string{"worker-cnv"}, wantHint: "worker-cnv"},
		// The MachineConfig generated for worker has role worker, which
		// worker-cnv renders too: both pools roll.
		{name: "KubeletConfig for worker: every pool that renders role worker", ref: kcRef, obj: kubeletConfig(byPool("worker")), want: []string{"worker", "worker-cnv"}, wantHint: "worker"},
		{name: "KubeletConfig by a custom label", ref: kcRef, obj: kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{"custom-kubelet": "large"}}), want: []string{"worker", "worker-cnv"}},
		{name: "KubeletConfig for master: master only", ref: kcRef, obj: kubeletConfig(byPool("master")), want: []string{"master"}, wantHint: "master"},
		{name: "KubeletConfig by an expression over two pools", ref: kcRef,
			obj: kubeletConfig(map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
				"key": PoolLabelPrefix + "master", "operator": "DoesNotExist"}}}), want: []string{"worker", "worker-cnv"}},
		// The role label selects MachineConfigs, not pools: a KubeletConfig
		// that uses it selects nothing.
		{name: "KubeletConfig by a MachineConfig role: nothing", ref: kcRef, obj: kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{RoleLabel: "worker"}})},
		{name: "KubeletConfig with an empty selector: nothing", ref: kcRef, obj: kubeletConfig(map[string]interface{}{})},
		{name: "KubeletConfig without a selector: nothing", ref: kcRef, obj: kubeletConfig(nil)},
		{name: "KubeletConfig without an object (a Delete not read): nothing", ref: kcRef},
		{name: "KubeletConfig with an invalid selector", ref: kcRef, obj: kubeletConfig(map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
			"key": "a", "operator": "Bogus"}}}), wantErr: "KubeletConfig 'dedicated-cpus' has an invalid machineConfigPoolSelector"},
		{name: "MachineConfig by its role, custom pools too", ref: mcRef,
			obj: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{RoleLabel: "worker"}}}, want: []string{"worker", "worker-cnv"}, wantHint: "worker"},
		{name: "MachineConfig without labels: the worker role", ref: mcRef, want: []string{"worker", "worker-cnv"}, wantHint: "worker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			change := ChangeOf(tt.ref, tt.obj)
			got, err := RolledPools(pools, change)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			var names []string
			for _, p := range got {
				names = append(names, p.GetName())
			}
			if err != nil || !reflect.DeepEqual(names, tt.want) {
				t.Errorf("RolledPools = %v, %v; want %v", names, err, tt.want)
			}
			if hint := change.PoolHint(); hint != tt.wantHint {
				t.Errorf("PoolHint = %q, want %q", hint, tt.wantHint)
			}
			// The reboot note rolls the same pools.
			reboots, err := Rolls(pools, []Change{change})
			var rolled []string
			for _, r := range reboots {
				rolled = append(rolled, r.Pool)
			}
			if err != nil || !reflect.DeepEqual(rolled, tt.want) {
				t.Errorf("Rolls = %v, %v; want %v", rolled, err, tt.want)
			}
		})
	}
}

// Which generated MachineConfigs each pool renders: the pools a
// KubeletConfig selects decide what it is rendered as, and every pool
// whose machineConfigSelector selects one of those renders it.
func TestRenderedBy(t *testing.T) {
	role := func(roles ...interface{}) map[string]interface{} {
		return map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{"key": RoleLabel, "operator": "In", "values": roles}}}
	}
	pools := []unstructured.Unstructured{
		labeledPool("worker-cnv", map[string]interface{}{PoolLabelPrefix + "worker-cnv": "", "vms": "yes"}, role("worker", "worker-cnv")),
		labeledPool("worker", map[string]interface{}{PoolLabelPrefix + "worker": "", "vms": "yes"}, role("worker")),
		labeledPool("infra", map[string]interface{}{PoolLabelPrefix + "infra": ""}, role("infra")),
	}
	withSuffix := func(obj map[string]interface{}, suffix string) map[string]interface{} {
		obj["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{MCNameSuffixAnnotation: suffix}
		return obj
	}
	tests := []struct {
		name string
		obj  map[string]interface{}
		want map[string][]string // pool -> generated MachineConfigs it renders
	}{
		{"for worker", kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{PoolLabelPrefix + "worker": ""}}),
			map[string][]string{"worker": {"99-worker-generated-kubelet"}, "worker-cnv": {"99-worker-generated-kubelet"}}},
		{"for worker, with its suffix", withSuffix(kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{PoolLabelPrefix + "worker": ""}}), "2"),
			map[string][]string{"worker": {"99-worker-generated-kubelet-2"}, "worker-cnv": {"99-worker-generated-kubelet-2"}}},
		{"for worker-cnv", kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{PoolLabelPrefix + "worker-cnv": ""}}),
			map[string][]string{"worker-cnv": {"99-worker-cnv-generated-kubelet"}}},
		{"for both: worker-cnv renders both", kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{"vms": "yes"}}),
			map[string][]string{"worker": {"99-worker-generated-kubelet"}, "worker-cnv": {"99-worker-cnv-generated-kubelet", "99-worker-generated-kubelet"}}},
		{"for infra", kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{PoolLabelPrefix + "infra": ""}}),
			map[string][]string{"infra": {"99-infra-generated-kubelet"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			change := ChangeOf(kcRef, tt.obj)
			got := map[string][]string{}
			for i := range pools {
				names, err := change.RenderedBy(&pools[i], pools)
				if err != nil {
					t.Fatal(err)
				}
				if len(names) > 0 {
					got[pools[i].GetName()] = names
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RenderedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

// A custom pool rolls out a KubeletConfig for worker through the
// MachineConfig generated for worker, not one named after itself.
func TestEvaluateTargetRolloutOnAnotherPool(t *testing.T) {
	gen := "99-worker-generated-kubelet"
	pool := poolState{generation: 2, observed: 2, specName: "rendered-worker-cnv-b", statusName: "rendered-worker-cnv-b",
		specSources: []string{"00-worker", gen}, statusSources: []string{"00-worker", gen},
		machines: 3, updated: 3, ready: 3, updatedCond: "True", updatingCond: "False"}.obj()
	empty := ""
	live := liveKubeletConfig(1, 1, &empty, "Success:Success")
	if r := EvaluateTargetRollout(pool, "worker-cnv", kcRef, live, v1alpha1.OperationCreate, "rendered-worker-cnv-a", []string{gen}); !r.Done {
		t.Errorf("with the generated MachineConfig it renders: %+v, want done", r)
	}
	notYet := poolState{generation: 2, observed: 2, specName: "rendered-worker-cnv-a", statusName: "rendered-worker-cnv-a",
		specSources: []string{"00-worker"}, statusSources: []string{"00-worker"},
		machines: 3, updated: 3, ready: 3, updatedCond: "True", updatingCond: "False"}.obj()
	if r := EvaluateTargetRollout(notYet, "worker-cnv", kcRef, live, v1alpha1.OperationCreate, "rendered-worker-cnv-a", []string{gen}); r.Done {
		t.Errorf("before the render: %+v, want not done", r)
	}
	both := []string{"99-worker-cnv-generated-kubelet", gen}
	if r := EvaluateTargetRollout(pool, "worker-cnv", kcRef, live, v1alpha1.OperationCreate, "rendered-worker-cnv-a", both); r.Done {
		t.Errorf("one of two generated MachineConfigs rendered: %+v, want not done", r)
	}
}

func TestRollsPools(t *testing.T) {
	tests := []struct {
		ref  v1alpha1.ObjectReference
		want bool
	}{
		{kcRef, true},
		{mcRef, true},
		{v1alpha1.ObjectReference{APIVersion: "example.com/v1", Kind: "KubeletConfig", Name: "x"}, false},
		{v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}, false},
	}
	for _, tt := range tests {
		if got := RollsPools(tt.ref); got != tt.want {
			t.Errorf("RollsPools(%s %s) = %v, want %v", tt.ref.APIVersion, tt.ref.Kind, got, tt.want)
		}
	}
}

func TestGeneratedKubeletName(t *testing.T) {
	for _, tt := range []struct{ pool, suffix, want string }{
		{"worker-cnv", "", "99-worker-cnv-generated-kubelet"},
		{"worker", "1", "99-worker-generated-kubelet-1"},
		{"worker", "9", "99-worker-generated-kubelet-9"},
	} {
		if got := GeneratedKubeletName(tt.pool, tt.suffix); got != tt.want {
			t.Errorf("GeneratedKubeletName(%q, %q) = %q, want %q", tt.pool, tt.suffix, got, tt.want)
		}
	}
}

func liveKubeletConfig(generation, observed int64, suffix *string, conditions ...string) *unstructured.Unstructured {
	var conds []interface{}
	for _, c := range conditions {
		typ, msg, _ := strings.Cut(c, ":")
		conds = append(conds, map[string]interface{}{"type": typ, "status": "True", "message": msg})
	}
	kc := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "dedicated-cpus", "generation": generation},
		"status":   map[string]interface{}{"observedGeneration": observed, "conditions": conds},
	}}
	if suffix != nil {
		kc.SetAnnotations(map[string]string{MCNameSuffixAnnotation: *suffix})
	}
	return kc
}

func TestKubeletConfigRefusal(t *testing.T) {
	refused := "Error: KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: systemd"
	tests := []struct {
		name string
		kc   *unstructured.Unstructured
		want string
	}{
		{"none", nil, ""},
		{"not looked at yet", liveKubeletConfig(1, 0, nil), ""},
		{"success", liveKubeletConfig(1, 1, nil, "Success:Success"), ""},
		{"failure", liveKubeletConfig(2, 2, nil, "Success:Success", "Failure:"+refused), refused},
		{"failure of an older generation", liveKubeletConfig(3, 2, nil, "Failure:"+refused), ""},
		{"failure then success", liveKubeletConfig(2, 2, nil, "Failure:"+refused, "Success:Success"), ""},
	}
	for _, tt := range tests {
		if got := KubeletConfigRefusal(tt.kc); got != tt.want {
			t.Errorf("%s: KubeletConfigRefusal = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEvaluateTargetRollout(t *testing.T) {
	empty, one := "", "1"
	gen := "99-worker-generated-kubelet"
	rolled := func(name string, sources ...string) *unstructured.Unstructured {
		return poolState{generation: 2, observed: 2, specName: name, statusName: name, specSources: sources, statusSources: sources,
			machines: 3, updated: 3, ready: 3, updatedCond: "True", updatingCond: "False"}.obj()
	}
	tests := []struct {
		name     string
		pool     *unstructured.Unstructured
		live     *unstructured.Unstructured
		op       v1alpha1.Operation
		before   string
		done     bool
		degraded bool
		message  string
	}{
		{name: "created: rolled out with the generated MachineConfig", pool: rolled("rendered-worker-b", "00-worker", gen),
			live: liveKubeletConfig(1, 1, &empty, "Success:Success"), op: v1alpha1.OperationCreate, before: "rendered-worker-a", done: true},
		{name: "created: not rendered yet", pool: rolled("rendered-worker-a", "00-worker"),
			live: liveKubeletConfig(1, 0, nil), op: v1alpha1.OperationCreate, before: "rendered-worker-a", message: "processing changes"},
		{name: "created with a suffix: the suffixed MachineConfig counts", pool: rolled("rendered-worker-b", "00-worker", gen, gen+"-1"),
			live: liveKubeletConfig(1, 1, &one, "Success:Success"), op: v1alpha1.OperationCreate, before: "rendered-worker-a", done: true},
		{name: "created with a suffix: the unsuffixed one is another KubeletConfig's", pool: rolled("rendered-worker-b", "00-worker", gen),
			live: liveKubeletConfig(1, 1, &one, "Success:Success"), op: v1alpha1.OperationCreate, before: "rendered-worker-a", message: "processing changes"},
		{name: "updated: the same rendered config is not done", pool: rolled("rendered-worker-a", "00-worker", gen),
			live: liveKubeletConfig(2, 2, &empty, "Success:Success"), op: v1alpha1.OperationUpdate, before: "rendered-worker-a", message: "processing changes"},
		{name: "updated: a new rendered config rolled out", pool: rolled("rendered-worker-b", "00-worker", gen),
			live: liveKubeletConfig(2, 2, &empty, "Success:Success"), op: v1alpha1.OperationUpdate, before: "rendered-worker-a", done: true},
		{name: "refused by the MachineConfig operator", pool: rolled("rendered-worker-a", "00-worker"),
			live: liveKubeletConfig(1, 1, nil, "Failure:Error: KubeletConfiguration: clusterDNS is not allowed to be set"), op: v1alpha1.OperationCreate, before: "rendered-worker-a",
			degraded: true, message: "the MachineConfig operator refused KubeletConfig 'dedicated-cpus': Error: KubeletConfiguration: clusterDNS is not allowed to be set"},
		{name: "deleted: the generated MachineConfig still rendered", pool: rolled("rendered-worker-b", "00-worker", gen),
			op: v1alpha1.OperationDelete, before: "rendered-worker-b", message: "is not removed yet"},
		{name: "deleted: rolled out without it", pool: rolled("rendered-worker-c", "00-worker"),
			op: v1alpha1.OperationDelete, before: "rendered-worker-b", done: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := EvaluateTargetRollout(tt.pool, "worker", kcRef, tt.live, tt.op, tt.before, nil)
			if r.Done != tt.done || r.Degraded != tt.degraded || !strings.Contains(r.Message, tt.message) {
				t.Errorf("got %+v; want done %v, degraded %v, message containing %q", r, tt.done, tt.degraded, tt.message)
			}
		})
	}
	// A MachineConfig item is evaluated as before.
	if r := EvaluateTargetRollout(rolled("rendered-worker-b", "00-worker", "99-psi"), "worker", mcRef, nil, v1alpha1.OperationCreate, "rendered-worker-a", nil); !r.Done {
		t.Errorf("MachineConfig: %+v, want done", r)
	}
}

func TestKubeletRenderedSpec(t *testing.T) {
	files := func(spec map[string]interface{}) []string {
		l, _, _ := unstructured.NestedSlice(spec, "config", "storage", "files")
		var out []string
		for _, f := range l {
			out = append(out, f.(map[string]interface{})["path"].(string))
		}
		return out
	}
	if got := KubeletRenderedSpec(nil); got != nil {
		t.Errorf("nil spec: %v", got)
	}
	static := map[string]interface{}{"kubeletConfig": map[string]interface{}{"cpuManagerPolicy": "static"}}
	none := map[string]interface{}{"kubeletConfig": map[string]interface{}{"cpuManagerPolicy": "none"}}
	if reflect.DeepEqual(KubeletRenderedSpec(static), KubeletRenderedSpec(none)) {
		t.Error("a kubeletConfig change leaves the rendered kubelet.conf as it was")
	}
	if got := files(KubeletRenderedSpec(static)); !reflect.DeepEqual(got, []string{KubeletConfigFile}) {
		t.Errorf("files = %v", got)
	}
	all := map[string]interface{}{"autoSizingReserved": true, "logLevel": int64(4), "kubeletConfig": map[string]interface{}{}}
	if got := files(KubeletRenderedSpec(all)); !reflect.DeepEqual(got, []string{KubeletConfigFile, "/etc/node-sizing-enabled.env", "/etc/systemd/system/kubelet.service.d/20-logging.conf"}) {
		t.Errorf("files = %v", got)
	}
}
