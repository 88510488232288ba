package cluster

import (
	"context"
	"fmt"
	"io"
	"path"

	jsonv2 "github.com/go-json-experiment/json"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// vmiList is what the drain assessment reads of a VirtualMachineInstance
// list. A VMI is large (its spec and status run to kilobytes on a real
// cluster); decoded whole into unstructured objects, 2 000 of them cost a
// plan several times its own time, so only these fields are decoded, with
// a decoder that skips the rest quickly.
type vmiList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []vmiItem `json:"items"`
}

// vmiItem is what is read of one VirtualMachineInstance, in a list or a
// watch event (vmiListWatch).
type vmiItem struct {
	Metadata struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
		Labels          struct {
			NodeName string `json:"kubevirt.io/nodeName"`
		} `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		EvictionStrategy string `json:"evictionStrategy"`
	} `json:"spec"`
	Status struct {
		NodeName   string `json:"nodeName"`
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
	} `json:"status"`
}

// vmi is the item as kubevirt.ReadVMI reads a whole object.
func (it *vmiItem) vmi() kubevirt.VMI {
	v := kubevirt.VMI{Namespace: it.Metadata.Namespace, Name: it.Metadata.Name, Node: it.Status.NodeName,
		Phase: it.Status.Phase, Strategy: it.Spec.EvictionStrategy}
	if v.Node == "" {
		v.Node = it.Metadata.Labels.NodeName // kubevirt.NodeNameLabel
	}
	for _, c := range it.Status.Conditions {
		switch c.Type {
		case "Ready":
			v.Ready = c.Status == "True"
		case "LiveMigratable":
			v.Condition, v.Migratable, v.Reason = true, c.Status == "True", c.Reason
		}
	}
	return v
}

// vmis turns the decoded list into what the assessment reads.
func (l *vmiList) vmis() []kubevirt.VMI {
	out := make([]kubevirt.VMI, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].vmi()
	}
	return out
}

// ListVMIs reads every VirtualMachineInstance with one list; served is
// false when the cluster does not serve kubevirt.io/v1
// VirtualMachineInstance (no mapping, or its CRD went away and the list
// answers 404). Without a raw client (tests) it lists through the dynamic
// client.
func (c *Cluster) ListVMIs(ctx context.Context) ([]kubevirt.VMI, bool, error) {
	if c.Raw == nil {
		items, served, err := c.ListIfServed(ctx, VirtualMachineInstanceGVK)
		out := make([]kubevirt.VMI, len(items))
		for i := range items {
			out[i] = kubevirt.ReadVMI(&items[i])
		}
		return out, served, err
	}
	mapping, err := c.Mapper.RESTMapping(VirtualMachineInstanceGVK.GroupKind(), VirtualMachineInstanceGVK.Version)
	if meta.IsNoMatchError(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	gvr := mapping.Resource
	body, err := c.Raw.Get().AbsPath(path.Join("/apis", gvr.Group, gvr.Version, gvr.Resource)).
		SetHeader("Accept", "application/json").Stream(ctx)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("listing VirtualMachineInstances: %w", err)
	}
	defer body.Close()
	var list vmiList
	if err := jsonv2.UnmarshalRead(body, &list); err != nil {
		return nil, false, fmt.Errorf("reading the list of VirtualMachineInstances: %w", err)
	}
	_, _ = io.Copy(io.Discard, body)
	return list.vmis(), true, nil
}

// VirtualMachineInstanceGVK is KubeVirt's VMI.
var VirtualMachineInstanceGVK = kubevirt.VirtualMachineInstanceGVK

// NewRawClient is the client Raw reads through: unversioned, JSON, and
// without a timeout of its own (a watch lasts minutes; the discovery
// client's, for one, cuts every request at 32 s).
func NewRawClient(config *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(config)
	c.APIPath, c.GroupVersion, c.Timeout = "", nil, 0
	c.AcceptContentTypes, c.ContentType = "application/json", "application/json"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.UnversionedRESTClientFor(c)
}
