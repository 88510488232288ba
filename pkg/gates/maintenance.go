package gates

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Node conditions other controllers set while they maintain a node
// (Kubernetes' node lifecycle conditions).
const (
	MaintenanceInProgress corev1.NodeConditionType = "MaintenanceInProgress"
	DrainInProgress       corev1.NodeConditionType = "DrainInProgress"
)

// NodeMaintenance is a medik8s NodeMaintenance
// (nodemaintenance.medik8s.io/v1beta1): while it exists, its node is
// cordoned and drained for someone else's maintenance, whatever its phase.
type NodeMaintenance struct {
	Name, NodeName, Phase string
}

// OthersMaintenance says which nodes of a pool someone else maintains
// now (a NodeMaintenance, or a MaintenanceInProgress or DrainInProgress
// condition), each with why, sorted by node; ours are the nodes of the
// step in flight, which the MCO drains itself. A pool with any is not
// stepped until they end.
func OthersMaintenance(nodes []corev1.Node, maintenances []NodeMaintenance, ours []string) []string {
	mine := setOf(ours)
	byNode := map[string][]string{}
	for _, m := range maintenances {
		phase := m.Phase
		if phase == "" {
			phase = "pending"
		}
		byNode[m.NodeName] = append(byNode[m.NodeName], fmt.Sprintf("NodeMaintenance '%s' (%s)", m.Name, phase))
	}
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if mine[n.Name] {
			continue
		}
		why := byNode[n.Name]
		for _, c := range n.Status.Conditions {
			if (c.Type == MaintenanceInProgress || c.Type == DrainInProgress) && c.Status == corev1.ConditionTrue {
				why = append(why, fmt.Sprintf("condition %s=True (%s)", c.Type, orUnknown(c.Reason)))
			}
		}
		if len(why) > 0 {
			out = append(out, fmt.Sprintf("node '%s': %s", n.Name, strings.Join(why, ", ")))
		}
	}
	sort.Strings(out)
	return out
}
