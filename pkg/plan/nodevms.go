package plan

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// NodeVMs serves the Nodes and VirtualMachineInstances plans read from
// caches (*cluster.NodeVMCache): each returns, shared and sorted, what its
// cache holds and the resourceVersion it is at; ok is false until the
// cache has synced, or while the cluster does not serve the kind, and the
// plan then reads live.
type NodeVMs interface {
	Nodes() (nodes []unstructured.Unstructured, resourceVersion string, ok bool)
	VMIs() (vmis []kubevirt.VMI, resourceVersion string, ok bool)
}

// ReadAt says where a plan read its Nodes and VMIs: the resourceVersion of
// the cache each came from, "" when read live (or not read at all).
type ReadAt struct {
	Nodes, VMIs string
}

// readAt records a ReadAt while the reads run.
type readAt struct {
	mu sync.Mutex
	at ReadAt
}

func (r *readAt) set(f func(*ReadAt)) {
	r.mu.Lock()
	f(&r.at)
	r.mu.Unlock()
}

func (r *readAt) get() ReadAt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at
}

// nodeReads are the Node and VMI reads of one plan: from the caches when
// cached and they are synced, else live; at records the cache's
// resourceVersion of each read from one.
func (e *Engine) nodeReads(ctx context.Context, cached bool, at *readAt) (nodes func() ([]unstructured.Unstructured, error), vmis func() ([]kubevirt.VMI, bool, error)) {
	c := e.Cluster
	nodes = func() ([]unstructured.Unstructured, error) {
		if cached && e.NodeVMs != nil {
			if items, rv, ok := e.NodeVMs.Nodes(); ok {
				at.set(func(a *ReadAt) { a.Nodes = rv })
				return items, nil
			}
		}
		return c.List(ctx, profiles.NodeGVK)
	}
	vmis = func() ([]kubevirt.VMI, bool, error) {
		if cached && e.NodeVMs != nil && c.ServedNow(cluster.VirtualMachineInstanceGVK) {
			if items, rv, ok := e.NodeVMs.VMIs(); ok {
				at.set(func(a *ReadAt) { a.VMIs = rv })
				return items, true, nil
			}
		}
		return c.ListVMIs(ctx)
	}
	return nodes, vmis
}
