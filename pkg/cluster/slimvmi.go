package cluster

import (
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// inlineBytes is room in a CachedVMI for the bytes of its own strings
// (name and resourceVersion); longer ones get an allocation of their own.
const inlineBytes = 48

// slimVMI keeps of a VMI its resourceVersion and kubevirt.VMI (namespace,
// name, node, phase, eviction strategy, LiveMigratable): the VMI cache's
// transform when it lists through the dynamic client (vmiListWatch
// decodes as little in the first place). The strings many VMIs share are interned (see intern for how
// far that goes); the bytes of the two each VMI has of its own are kept
// in the CachedVMI itself. Allocated apart, each among the garbage of
// decoding its VMI, ten thousand such small strings kept in use spans of
// the small size classes that the garbage had left nearly empty.
func slimVMI(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already cut down, or a tombstone
	}
	return newCachedVMI(u.GetResourceVersion(), kubevirt.ReadVMI(u)), nil
}

// newCachedVMI is v at resourceVersion as the cache keeps it: the strings
// many VMIs share interned, the bytes of the two each has of its own in
// the CachedVMI itself.
func newCachedVMI(resourceVersion string, v kubevirt.VMI) *CachedVMI {
	v.Namespace, v.Node, v.Phase = intern(v.Namespace), intern(v.Node), intern(v.Phase)
	v.Strategy, v.Reason = intern(v.Strategy), intern(v.Reason)
	c := &CachedVMI{VMI: v}
	rest := c.own[:0]
	c.VMI.Name, rest = keep(rest, v.Name)
	c.ResourceVersion, _ = keep(rest, resourceVersion)
	return c
}

// keep copies s into the room left in buf when it fits, else into an
// allocation of its own; it returns the copy and the room left. The
// bytes are never written again.
func keep(buf []byte, s string) (string, []byte) {
	if s == "" {
		return "", buf
	}
	if cap(buf)-len(buf) < len(s) {
		return string([]byte(s)), buf
	}
	start := len(buf)
	buf = append(buf, s...)
	return unsafe.String(&buf[start], len(s)), buf
}
