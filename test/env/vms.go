package env

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/test/names"
)

// The node world of the environment: worker Nodes (the control plane has
// no kubelet, so they are objects only) and VirtualMachineInstances
// running on them, as KubeVirt reports them. Nothing runs: the fake MCO
// counts machines, and these objects are what the plan and the controller
// read to tell what a node drain does to the VMs.

// WorkerNodeLabel selects the worker pool's nodes (its nodeSelector).
const WorkerNodeLabel = "node-role.kubernetes.io/worker"

// CreateNode creates a Node with labels; it is left as it is if it exists.
func (e *Env) CreateNode(ctx context.Context, name string, labels map[string]string) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Node %s: %w", name, err)
	}
	return nil
}

// CreateWorkerNodes creates the worker Nodes name-0 … name-(n-1) and
// returns their names.
func (e *Env) CreateWorkerNodes(ctx context.Context, prefix string, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := e.CreateNode(ctx, out[i], map[string]string{WorkerNodeLabel: ""}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteNode deletes a Node; a missing one is no error.
func (e *Env) DeleteNode(ctx context.Context, name string) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	if err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s: %w", name, err)
	}
	return nil
}

// VMI is a VirtualMachineInstance running on a node.
type VMI struct {
	Namespace, Name, Node string
	// EvictionStrategy is spec.evictionStrategy; "" leaves it unset (the
	// cluster default applies).
	EvictionStrategy string
	// Migratable is the LiveMigratable condition; Reason its reason
	// (e.g. HostDeviceNotLiveMigratable). NoCondition leaves it out.
	Migratable  bool
	Reason      string
	NoCondition bool
	// Phase defaults to Running.
	Phase string
	// Memory is spec.domain.memory.guest (e.g. 8Gi), what a migration
	// copies; "" leaves it out.
	Memory string
	// Ready adds the Ready condition, True (its guest is up).
	Ready bool
}

// Object is the VirtualMachineInstance as KubeVirt reports a running one:
// the node in status.nodeName and the label kubevirt.io/nodeName, the
// phase and the LiveMigratable condition. VMIs have no status subresource:
// the status is written with the object.
func (v VMI) Object() *unstructured.Unstructured {
	phase := v.Phase
	if phase == "" {
		phase = "Running"
	}
	domain := map[string]interface{}{"devices": map[string]interface{}{}}
	if v.Memory != "" {
		domain["memory"] = map[string]interface{}{"guest": v.Memory}
	}
	spec := map[string]interface{}{"domain": domain}
	if v.EvictionStrategy != "" {
		spec["evictionStrategy"] = v.EvictionStrategy
	}
	status := map[string]interface{}{"phase": phase, "nodeName": v.Node}
	var conditions []interface{}
	if v.Ready {
		conditions = append(conditions, map[string]interface{}{"type": "Ready", "status": "True"})
	}
	if !v.NoCondition {
		cond := map[string]interface{}{"type": "LiveMigratable", "status": "True"}
		if !v.Migratable {
			cond["status"] = "False"
			cond["reason"] = v.Reason
			cond["message"] = "cannot migrate VMI: " + v.Reason
		}
		conditions = append(conditions, cond)
	}
	if conditions != nil {
		status["conditions"] = conditions
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]interface{}{"namespace": v.Namespace, "name": v.Name,
			"labels": map[string]interface{}{"kubevirt.io/nodeName": v.Node}},
		"spec":   spec,
		"status": status,
	}}
}

func (e *Env) vmis(namespace string) (dynamic.ResourceInterface, error) {
	cfg := rest.CopyConfig(e.AdminConfig)
	cfg.QPS = -1 // the bench creates thousands
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return dyn.Resource(names.VirtualMachineInstances).Namespace(namespace), nil
}

// CreateVMI creates a VirtualMachineInstance on its node.
func (e *Env) CreateVMI(ctx context.Context, v VMI) error {
	ri, err := e.vmis(v.Namespace)
	if err != nil {
		return err
	}
	if _, err := ri.Create(ctx, v.Object(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VirtualMachineInstance %s/%s: %w", v.Namespace, v.Name, err)
	}
	return nil
}

// UpdateVMI writes a VMI's spec and status as v says (its migratability,
// say), as KubeVirt updates a running one.
func (e *Env) UpdateVMI(ctx context.Context, v VMI) error {
	ri, err := e.vmis(v.Namespace)
	if err != nil {
		return err
	}
	cur, err := ri.Get(ctx, v.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading VirtualMachineInstance %s/%s: %w", v.Namespace, v.Name, err)
	}
	obj := v.Object()
	obj.SetResourceVersion(cur.GetResourceVersion())
	if _, err := ri.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating VirtualMachineInstance %s/%s: %w", v.Namespace, v.Name, err)
	}
	return nil
}

// DeleteVMI deletes a VirtualMachineInstance; a missing one is no error.
func (e *Env) DeleteVMI(ctx context.Context, namespace, name string) error {
	ri, err := e.vmis(namespace)
	if err != nil {
		return err
	}
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VirtualMachineInstance %s/%s: %w", namespace, name, err)
	}
	return nil
}

// InstallCRD applies the CRDs of a manifest file of the repository (e.g.
// artifacts/crds/virtualmachineinstance.yaml) and waits until they are
// Established: a spec that deleted one puts it back.
func (e *Env) InstallCRD(ctx context.Context, file string) error {
	objs, err := readManifests(filepath.Join(e.RepoRoot, file))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := e.applier.apply(ctx, obj); err != nil {
			return err
		}
	}
	return e.applier.waitEstablished(ctx, objs)
}

// SetNodeResources sets a Node's allocatable (and capacity) resources, e.g.
// {"memory": "64Gi", "cpu": "32", "pods": "110", "nvidia.com/A100": "1"},
// and adds labels, as a kubelet and node labellers would, and removes the
// not-ready taint.
func (e *Env) SetNodeResources(ctx context.Context, name string, allocatable, labels map[string]string) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Node %s: %w", name, err)
	}
	// The API server taints a new Node not-ready; a Ready kubelet's node
	// loses the taint, and pods may then be placed there.
	kept := n.Spec.Taints[:0]
	for _, t := range n.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			kept = append(kept, t)
		}
	}
	if len(kept) != len(n.Spec.Taints) || len(labels) > 0 {
		n.Spec.Taints = kept
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
		if n, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("labelling or untainting Node %s: %w", name, err)
		}
	}
	list := corev1.ResourceList{}
	for k, v := range allocatable {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return err
		}
		list[corev1.ResourceName(k)] = q
	}
	n.Status.Allocatable, n.Status.Capacity = list, list
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the resources of Node %s: %w", name, err)
	}
	return nil
}

// LauncherPod is the virt-launcher pod of a VMI on its node: what a
// migration target pod asks of another node.
type LauncherPod struct {
	Namespace, VMI, Node string
	// Requests, e.g. {"memory": "50Gi", "cpu": "1"}.
	Requests map[string]string
	// NodeSelector as virt-controller renders it (a CPU model label…).
	NodeSelector map[string]string
}

// LauncherPodName is the name CreateLauncherPod gives the pod of a VMI.
func LauncherPodName(vmi string) string { return "virt-launcher-" + vmi }

// CreateLauncherPod creates the VMI's launcher pod bound to its node and
// reports it Running (nothing runs it: there is no kubelet).
func (e *Env) CreateLauncherPod(ctx context.Context, l LauncherPod) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	req := corev1.ResourceList{}
	for k, v := range l.Requests {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return err
		}
		req[corev1.ResourceName(k)] = q
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: LauncherPodName(l.VMI),
			Labels: map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": l.VMI}},
		Spec: corev1.PodSpec{NodeName: l.Node, NodeSelector: l.NodeSelector,
			Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher", Resources: corev1.ResourceRequirements{Requests: req, Limits: limitsOf(req)}}}},
	}
	created, err := kube.CoreV1().Pods(l.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := kube.CoreV1().Pods(l.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("reporting pod %s/%s Running: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// limitsOf are the limits of extended resources, which must equal their
// requests.
func limitsOf(req corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, q := range req {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			out[k] = q
		}
	}
	return out
}

// DeleteLauncherPod deletes a VMI's launcher pod at once (no kubelet
// would confirm a graceful one); a missing one is no error.
func (e *Env) DeleteLauncherPod(ctx context.Context, namespace, vmi string) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	zero := int64(0)
	if err := kube.CoreV1().Pods(namespace).Delete(ctx, LauncherPodName(vmi), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", namespace, LauncherPodName(vmi), err)
	}
	return nil
}
