package pools

// Someone else's maintenance: a pool with a node under a medik8s
// NodeMaintenance, or carrying a MaintenanceInProgress or DrainInProgress
// condition another controller set, is not stepped (nor its first drain
// started) until it ends; the items rolling out on it say so, as for any
// reason a pool stays paused.

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/gates"
)

var nodeMaintenanceGVK = schema.GroupVersionKind{Group: "nodemaintenance.medik8s.io", Version: "v1beta1", Kind: "NodeMaintenance"}

// othersMaintenance says why pool's nodes are someone else's to maintain
// now ("" when none is); step are the nodes of our step in flight.
func (s *stepper) othersMaintenance(ctx context.Context, pool *unstructured.Unstructured, all []unstructured.Unstructured, step []string) (string, error) {
	nodes, err := s.listNodes(ctx)
	if err != nil {
		return "", err
	}
	names, err := (&disruption.Cluster{Pools: all, Nodes: nodes}).PoolNodes(pool)
	if err != nil {
		return "", err
	}
	list, err := s.cluster.List(ctx, nodeMaintenanceGVK)
	if err != nil {
		return "", fmt.Errorf("reading the NodeMaintenances: %w", err)
	}
	var maintenances []gates.NodeMaintenance
	for i := range list {
		node, _, _ := unstructured.NestedString(list[i].Object, "spec", "nodeName")
		phase, _, _ := unstructured.NestedString(list[i].Object, "status", "phase")
		maintenances = append(maintenances, gates.NodeMaintenance{Name: list[i].GetName(), NodeName: node, Phase: phase})
	}
	var ofPool []corev1.Node
	for i := range nodes {
		for _, name := range names {
			if nodes[i].GetName() == name {
				ofPool = append(ofPool, conditionsOf(&nodes[i]))
			}
		}
	}
	why := gates.OthersMaintenance(ofPool, maintenances, step)
	if len(why) == 0 {
		return "", nil
	}
	return fmt.Sprintf("someone else maintains nodes of MachineConfigPool '%s' (%s); its rollout goes on when that ends",
		pool.GetName(), strings.Join(why, "; ")), nil
}

// conditionsOf is a Node's name and conditions.
func conditionsOf(u *unstructured.Unstructured) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]interface{})
		t, _ := m["type"].(string)
		st, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(t), Status: corev1.ConditionStatus(st), Reason: reason})
	}
	return n
}
