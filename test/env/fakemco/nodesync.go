package fakemco

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// The node model's reads and writes: the Nodes of a pool, their
// annotations, cordon and Ready condition, and the pool status counted off
// them (nodes.go has the model itself).

var nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

const (
	workerPoolName = "worker"
	masterPoolName = "master"
)

// stepsNodes: the pool is rolled out over its Nodes.
func (c *poolController) stepsNodes(pool *unstructured.Unstructured) bool {
	return c.m.o.StepNodes || pool.GetAnnotations()[StepNodesAnnotation] == "true"
}

// syncPoolNodes is the node controller and the daemons of a pool that steps
// its Nodes: one pass of the model, the node writes, then the pool status.
// It returns when the next pass is due.
func (c *poolController) syncPoolNodes(ctx context.Context, pool *unstructured.Unstructured, now time.Time) (time.Time, error) {
	name := pool.GetName()
	delete(c.walks, name)
	p := newPoolView(pool)
	if p.specName() == "" { // not rendered yet
		return time.Time{}, nil
	}
	objs, err := c.poolNodes(pool)
	if err != nil {
		return time.Time{}, err
	}
	before := make([]nodeView, len(objs))
	for i, o := range objs {
		before[i] = newNodeView(o)
	}
	maxUnavail, _, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "maxUnavailable")
	step := c.m.o.StepTime
	if p.StepTime > 0 {
		step = p.StepTime
	}
	after, wake := stepNodes(p, before, maxUnavailable(maxUnavail, len(before)), now, step)
	for i := range after {
		if err := c.writeNode(ctx, before[i], after[i], now); err != nil {
			return time.Time{}, err
		}
	}
	c.countNodeUpdates(name, before, after)
	if err := c.writeNodeStatus(ctx, pool, nodeCounts(after, p.specName()), now); err != nil {
		return time.Time{}, err
	}
	return wake, nil
}

// poolNodes are the Nodes the pool's nodeSelector selects, by name; a
// node the worker pool and a custom pool both select is the custom pool's,
// as the MCO assigns it.
func (c *poolController) poolNodes(pool *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	sel, err := selectorAt(pool, "nodeSelector")
	if err != nil {
		return nil, fmt.Errorf("nodeSelector: %w", err)
	}
	var custom []labels.Selector
	if pool.GetName() == workerPoolName {
		pools, _ := c.pools.List(labels.Everything())
		for _, o := range pools {
			other, ok := o.(*unstructured.Unstructured)
			if !ok || other.GetName() == workerPoolName || other.GetName() == masterPoolName {
				continue
			}
			if s, err := selectorAt(other, "nodeSelector"); err == nil {
				custom = append(custom, s)
			}
		}
	}
	objs, err := c.nodes.List(sel)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || slices.ContainsFunc(custom, func(s labels.Selector) bool { return s.Matches(labels.Set(u.GetLabels())) }) {
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// selectorAt is the label selector at spec.<field>; none selects nothing.
func selectorAt(obj *unstructured.Unstructured, field string) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(obj.Object, "spec", field)
	if err != nil || !found {
		return labels.Nothing(), err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// newNodeView reads a Node.
func newNodeView(u *unstructured.Unstructured) nodeView {
	a := u.GetAnnotations()
	n := nodeView{Name: u.GetName(), Current: a[CurrentConfigAnnotation], Desired: a[DesiredConfigAnnotation],
		State: a[StateAnnotation], Reason: a[ReasonAnnotation], Ready: true,
		Cordoned: a[cordonedAnnotation] == "true", HeldNotReady: a[notReadyAnnotation] == "true",
		StayNotReady: a[NotReadyAfterRebootAnnotation] == "true"}
	n.DegradeReason, n.Degrade = a[DegradeAfterRebootAnnotation]
	n.Unschedulable, _, _ = unstructured.NestedBool(u.Object, "spec", "unschedulable")
	if t, err := time.Parse(time.RFC3339Nano, a[updateStartedAnnotation]); err == nil {
		n.Started = t
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			n.Ready = m["status"] == "True"
		}
	}
	return n
}

// nodeAnnotations are the annotations the model owns on a node, as a merge
// patch (nil removes one).
func nodeAnnotations(n nodeView) map[string]any {
	a := map[string]any{CurrentConfigAnnotation: n.Current, DesiredConfigAnnotation: n.Desired,
		StateAnnotation: n.State, ReasonAnnotation: n.Reason,
		updateStartedAnnotation: nil, cordonedAnnotation: nil, notReadyAnnotation: nil}
	if !n.Started.IsZero() {
		a[updateStartedAnnotation] = n.Started.UTC().Format(time.RFC3339Nano)
	}
	if n.Cordoned {
		a[cordonedAnnotation] = "true"
	}
	if n.HeldNotReady {
		a[notReadyAnnotation] = "true"
	}
	return a
}

// writeNode writes what the pass changed of a node: its annotations and
// cordon (one merge patch), its Ready condition (the status subresource).
func (c *poolController) writeNode(ctx context.Context, before, after nodeView, now time.Time) error {
	nodes := c.m.dyn.Resource(nodeGVR)
	if !equalNodeMeta(before, after) {
		patch := map[string]any{"metadata": map[string]any{"annotations": nodeAnnotations(after)},
			"spec": map[string]any{"unschedulable": after.Unschedulable}}
		if err := patchNode(ctx, nodes.Patch, after.Name, types.MergePatchType, patch); err != nil {
			return err
		}
	}
	if before.Ready != after.Ready {
		status, reason, msg := "True", "KubeletReady", "kubelet is posting ready status"
		if !after.Ready {
			status, reason, msg = "False", "KubeletNotReady", "the node is rebooting or not back (fake MCO)"
		}
		ts := now.UTC().Format(time.RFC3339)
		patch := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": status, "reason": reason, "message": msg,
			"lastHeartbeatTime": ts, "lastTransitionTime": ts}}}}
		if err := patchNode(ctx, nodes.Patch, after.Name, types.StrategicMergePatchType, patch, "status"); err != nil {
			return err
		}
	}
	if line := nodeLine(before, after); line != "" {
		c.m.logf("%s", line)
	}
	return nil
}

type patchFunc func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)

func patchNode(ctx context.Context, patch patchFunc, name string, pt types.PatchType, body map[string]any, sub ...string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = patch(ctx, name, pt, data, metav1.PatchOptions{FieldManager: mcoFieldManager}, sub...)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing Node %s: %w", name, err)
	}
	return nil
}

func equalNodeMeta(a, b nodeView) bool {
	return a.Current == b.Current && a.Desired == b.Desired && a.State == b.State && a.Reason == b.Reason &&
		a.Unschedulable == b.Unschedulable && a.Cordoned == b.Cordoned && a.HeldNotReady == b.HeldNotReady &&
		a.Started.Equal(b.Started)
}

// nodeLine is the log line of a node's change, if it changed.
func nodeLine(before, after nodeView) string {
	var notes []string
	if before.Desired != after.Desired {
		notes = append(notes, "desiredConfig = "+after.Desired)
	}
	if before.State != after.State {
		notes = append(notes, "state = "+after.State)
	}
	if before.Unschedulable != after.Unschedulable {
		notes = append(notes, fmt.Sprintf("unschedulable = %t", after.Unschedulable))
	}
	if before.Ready != after.Ready {
		notes = append(notes, fmt.Sprintf("Ready = %t", after.Ready))
	}
	if before.Current != after.Current {
		notes = append(notes, "currentConfig = "+after.Current)
	}
	if after.Reason != "" && before.Reason != after.Reason {
		notes = append(notes, fmt.Sprintf("reason %q", after.Reason))
	}
	if len(notes) == 0 {
		return ""
	}
	return "node " + after.Name + ": " + strings.Join(notes, ", ")
}

// writeNodeStatus writes the pool status counted off its nodes; a conflict
// re-reads the pool.
func (c *poolController) writeNodeStatus(ctx context.Context, pool *unstructured.Unstructured, counts machineCounts, now time.Time) error {
	retried := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if retried {
			fresh, err := c.m.dyn.Resource(poolGVR).Get(ctx, pool.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			pool = fresh
		}
		retried = true
		p := newPoolView(pool)
		status := statusOf(p, counts, now)
		if !statusChanged(pool, status) {
			return nil
		}
		obj := pool.DeepCopy()
		mergeStatus(obj, status)
		if _, err := c.m.dyn.Resource(poolGVR).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: mcoFieldManager}); err != nil {
			return err
		}
		c.m.logf("%s: %s %d/%d updated, %d ready, %d unavailable, %d degraded", p.Name, p.specName(),
			counts.Updated, counts.Machines, counts.Ready, counts.Unavailable, counts.Degraded)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// countNodeUpdates counts, per node index (name order), the updates the
// pass completed, and a rollout when the first node of a new config
// completes.
func (c *poolController) countNodeUpdates(pool string, before, after []nodeView) {
	for i := range after {
		if before[i].Current == "" || before[i].Current == after[i].Current {
			continue // adopted, or not updated
		}
		target := after[i].Current
		c.m.o.counts.update(pool, func(r *Rollouts) {
			if c.nodeRollouts[pool] != target {
				c.nodeRollouts[pool] = target
				r.Rollouts++
			}
			for len(r.NodeUpdates) <= i {
				r.NodeUpdates = append(r.NodeUpdates, 0)
			}
			r.NodeUpdates[i]++
		})
	}
}

// watchNodes queues, on every change of a Node, the pools that step their
// nodes.
func (c *poolController) watchNodes(inf cache.SharedIndexInformer) error {
	nodePools := func(any) {
		objs, _ := c.pools.List(labels.Everything())
		for _, o := range objs {
			if p, ok := o.(*unstructured.Unstructured); ok && c.stepsNodes(p) {
				c.queue.Add(p.GetName())
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nodePools, UpdateFunc: func(_, n any) { nodePools(n) }, DeleteFunc: nodePools,
	})
	return err
}
