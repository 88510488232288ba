package plan

import (
	"encoding/json"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// assessMemo keeps, per pool, the last assessment a plan made from the
// caches. What draining a pool's nodes does to its VMs, and whether the
// migrating ones fit, depends only on the cached Nodes, VMIs and pods, the
// pools and what the change does to a node; on 10 000 VMs it costs more
// than the rest of the plan. The caches hand out the same view until
// their objects change (a new one after each change), so a plan that
// reads the same views, pools and decision reuses the assessment. After a
// change of pods only (on a busy cluster, before most plans), the capacity
// check runs again on what it kept of the same views: the pool's nodes in
// rollout order and, until a launcher changes, the VMs paired with their
// launchers. The check right before a drain reads live and never uses it.
type assessMemo struct {
	mu     sync.Mutex
	byPool map[string]assessed
	// unset answers unsetStrategy for the VMI view it holds.
	unset struct {
		vmis  *kubevirt.VMI
		count int
		any   bool
	}
}

// unsetStrategy is true when a running VMI of vmis has no eviction
// strategy of its own (the cluster default then matters). A view the
// caches hand out again is answered from the memo: a scan of 10 000 VMIs
// per plan costs more than the rest of reading them.
func (m *assessMemo) unsetStrategy(vmis []kubevirt.VMI) bool {
	if m == nil || len(vmis) == 0 {
		return anyUnsetStrategy(vmis)
	}
	p := unsafe.SliceData(vmis)
	m.mu.Lock()
	if m.unset.vmis == p && m.unset.count == len(vmis) {
		defer m.mu.Unlock()
		return m.unset.any
	}
	m.mu.Unlock()
	any := anyUnsetStrategy(vmis)
	m.mu.Lock()
	m.unset.vmis, m.unset.count, m.unset.any = p, len(vmis), any
	m.mu.Unlock()
	return any
}

func anyUnsetStrategy(vmis []kubevirt.VMI) bool {
	for _, v := range vmis {
		if v.Strategy == "" && v.Running() {
			return true
		}
	}
	return false
}

// assessKey is everything an assessment of one pool is computed from.
// The views are held by pointer: a view kept here is never freed, so a
// new view cannot take its address.
type assessKey struct {
	nodes     *unstructured.Unstructured
	nodeCount int
	vmis      *kubevirt.VMI
	vmiCount  int
	pods      int64
	// pools: what the assessment reads of every pool (poolsRead).
	pools    string
	decision disruption.Decision
	def      disruption.Default
}

type assessed struct {
	key     assessKey
	in, out *v1alpha1.PoolReboot
	// inputs: what the capacity check read of the same views (nil when it
	// did not run).
	inputs *capacityInputs
}

// assessKeyOf is the key of an assessment on c with pods, or ok false when
// something was read live.
func assessKeyOf(c *disruption.Cluster, podsVersion int64, decision disruption.Decision) (assessKey, bool) {
	if podsVersion == 0 || c.NodesUnknown != "" || c.VMIsUnknown != "" {
		return assessKey{}, false
	}
	pools, err := poolsRead(c.Pools)
	if err != nil {
		return assessKey{}, false
	}
	return assessKey{
		nodes: unsafe.SliceData(c.Nodes), nodeCount: len(c.Nodes),
		vmis: unsafe.SliceData(c.VMIs), vmiCount: len(c.VMIs),
		pods: podsVersion, pools: pools, decision: decision, def: c.Default,
	}, true
}

// poolsRead is what an assessment reads of the pools: each one's name,
// nodeSelector (the worker pool's nodes are those no custom pool selects)
// and maxUnavailable. Not their status: the MachineConfig operator
// updates it as nodes come and go, which changes no assessment.
func poolsRead(pools []unstructured.Unstructured) (string, error) {
	type read struct {
		Name           string      `json:"name"`
		NodeSelector   interface{} `json:"nodeSelector,omitempty"`
		MaxUnavailable interface{} `json:"maxUnavailable,omitempty"`
	}
	out := make([]read, len(pools))
	for i := range pools {
		spec, _, _ := unstructured.NestedMap(pools[i].Object, "spec")
		out[i] = read{Name: pools[i].GetName(), NodeSelector: spec["nodeSelector"], MaxUnavailable: spec["maxUnavailable"]}
	}
	raw, err := json.Marshal(out)
	return string(raw), err
}

// get fills r with the kept assessment of its pool when it was made from
// key and the same reboot; false when there is none.
func (m *assessMemo) get(key assessKey, r *v1alpha1.PoolReboot) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	a, ok := m.byPool[r.Pool]
	m.mu.Unlock()
	if !ok || a.key != key || !reflect.DeepEqual(a.in, r) {
		return false
	}
	a.out.DeepCopyInto(r)
	return true
}

// inputs is what the capacity check kept when it assessed in from the
// same views, pools and decision as key, with other pods; nil when there
// is none.
func (m *assessMemo) inputs(key assessKey, in *v1alpha1.PoolReboot) *capacityInputs {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	a, ok := m.byPool[in.Pool]
	m.mu.Unlock()
	key.pods = a.key.pods
	if !ok || a.key != key || !reflect.DeepEqual(a.in, in) {
		return nil
	}
	return a.inputs
}

// put keeps the assessment out of in, made from key, with what its
// capacity check read.
func (m *assessMemo) put(key assessKey, in, out *v1alpha1.PoolReboot, inputs *capacityInputs) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byPool == nil {
		m.byPool = map[string]assessed{}
	}
	m.byPool[in.Pool] = assessed{key: key, in: in.DeepCopy(), out: out.DeepCopy(), inputs: inputs}
}
