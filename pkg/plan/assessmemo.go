package plan

import (
	"reflect"
	"strings"
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
// reads the same views, pools and decision reuses the assessment. The
// check right before a drain reads live and never uses it.
type assessMemo struct {
	mu     sync.Mutex
	byPool map[string]assessed
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
	// pools: every pool's name and resourceVersion (the worker pool's
	// nodes are those no custom pool selects).
	pools    string
	decision disruption.Decision
	def      disruption.Default
}

type assessed struct {
	key     assessKey
	in, out *v1alpha1.PoolReboot
}

// assessKeyOf is the key of an assessment on c with pods, or ok false when
// something was read live or has no resourceVersion (nothing to tell a
// change by).
func assessKeyOf(c *disruption.Cluster, podsVersion int64, decision disruption.Decision) (assessKey, bool) {
	if podsVersion == 0 || c.NodesUnknown != "" || c.VMIsUnknown != "" {
		return assessKey{}, false
	}
	var pools strings.Builder
	for i := range c.Pools {
		rv := c.Pools[i].GetResourceVersion()
		if rv == "" {
			return assessKey{}, false
		}
		pools.WriteString(c.Pools[i].GetName() + "@" + rv + ";")
	}
	return assessKey{
		nodes: unsafe.SliceData(c.Nodes), nodeCount: len(c.Nodes),
		vmis: unsafe.SliceData(c.VMIs), vmiCount: len(c.VMIs),
		pods: podsVersion, pools: pools.String(), decision: decision, def: c.Default,
	}, true
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

// put keeps the assessment out of in, made from key.
func (m *assessMemo) put(key assessKey, in, out *v1alpha1.PoolReboot) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byPool == nil {
		m.byPool = map[string]assessed{}
	}
	m.byPool[in.Pool] = assessed{key: key, in: in.DeepCopy(), out: out.DeepCopy()}
}
