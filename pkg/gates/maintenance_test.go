package gates

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOthersMaintenance(t *testing.T) {
	node := func(name string, conditions ...corev1.NodeCondition) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: conditions}}
	}
	draining := corev1.NodeCondition{Type: DrainInProgress, Status: corev1.ConditionTrue, Reason: "RemediationDrain"}
	done := corev1.NodeCondition{Type: MaintenanceInProgress, Status: corev1.ConditionFalse}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		nms   []NodeMaintenance
		ours  []string
		want  []string
	}{
		{name: "nobody maintains a node", nodes: []corev1.Node{node("w0", done), node("w1")}},
		{name: "a NodeMaintenance on a node of the pool, any phase", nodes: []corev1.Node{node("w0"), node("w1")},
			nms:  []NodeMaintenance{{Name: "fw-upgrade", NodeName: "w1", Phase: "Succeeded"}, {Name: "other-pool", NodeName: "m0", Phase: "Running"}},
			want: []string{"node 'w1': NodeMaintenance 'fw-upgrade' (Succeeded)"}},
		{name: "a drain condition set by another controller", nodes: []corev1.Node{node("w0", draining)},
			want: []string{"node 'w0': condition DrainInProgress=True (RemediationDrain)"}},
		{name: "our own step's node drained by the MCO: not someone else's", nodes: []corev1.Node{node("w0", draining)}, ours: []string{"w0"}},
		{name: "both on one node, a pending NodeMaintenance", nodes: []corev1.Node{node("w2", draining)}, nms: []NodeMaintenance{{Name: "nm", NodeName: "w2"}},
			want: []string{"node 'w2': NodeMaintenance 'nm' (pending), condition DrainInProgress=True (RemediationDrain)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OthersMaintenance(tc.nodes, tc.nms, tc.ours); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
