package dashboard

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

func states(nodes []gridNode) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = string(n.State)
	}
	return strings.Join(s, " ")
}

// TestNodesFromCounts: what the fake MCO (and the real one) report as
// counts becomes cells, one node in flight at a time.
func TestNodesFromCounts(t *testing.T) {
	for _, tc := range []struct {
		name                                     string
		machines, updated, degraded, unavailable int64
		paused                                   bool
		want                                     string
	}{
		{"all updated", 3, 3, 0, 0, false, "updated updated updated"},
		{"rollout starts", 3, 0, 0, 1, false, "updating waiting waiting"},
		{"second node", 3, 1, 0, 1, false, "updated updating waiting"},
		{"paused mid-way", 3, 1, 0, 0, true, "updated waiting waiting"},
		{"degraded in flight", 3, 1, 1, 1, false, "updated degraded waiting"},
		{"degraded after the rollout", 3, 3, 1, 0, false, "updated updated degraded"},
		{"counts beyond machines", 2, 5, 0, 3, false, "updated updated"},
		{"no machines", 0, 0, 0, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := states(nodesFromCounts(tc.machines, tc.updated, tc.degraded, tc.unavailable, tc.paused)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNodesFromAnnotations: the MachineConfig daemon's annotations say
// where each node is.
func TestNodesFromAnnotations(t *testing.T) {
	node := func(name, current, desired, state string) corev1.Node {
		a := map[string]string{currentConfigAnnotation: current, desiredConfigAnnotation: desired}
		if state != "" {
			a[stateAnnotation] = state
		}
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a}}
	}
	nodes := []corev1.Node{
		node("w0", "rendered-new", "rendered-new", "Done"),
		node("w1", "rendered-old", "rendered-new", "Working"),
		node("w2", "rendered-old", "rendered-old", "Done"),
		node("w3", "rendered-old", "rendered-new", "Degraded"),
		node("w4", "rendered-new", "rendered-new", "Working"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-mcd"}},
	}
	got := nodesFromAnnotations("rendered-new", nodes)
	if s := states(got); s != "updated updating waiting degraded updating" {
		t.Errorf("states %q", s)
	}
	if got[0].Name != "w0" || got[1].Detail != "from rendered-old" {
		t.Errorf("cells %+v", got)
	}
	if nodesFromAnnotations("rendered-new", []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}}) != nil {
		t.Error("nodes without annotations make no cells")
	}
}

func testPool(paused bool, annotations map[string]any, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": "worker", "annotations": annotations},
		"spec":     map[string]any{"paused": paused, "configuration": map[string]any{"name": "rendered-worker-new"}},
		"status":   status,
	}}
	return u
}

func TestGridPool(t *testing.T) {
	rolling := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1), "unavailableMachineCount": int64(1),
		"configuration": map[string]any{"name": "rendered-worker-old"},
		"conditions":    []any{map[string]any{"type": "Updating", "status": "True", "message": "All nodes are updating to MachineConfig rendered-worker-new"}}}
	done := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(3), "configuration": map[string]any{"name": "rendered-worker-new"}}
	degraded := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1), "degradedMachineCount": int64(1), "unavailableMachineCount": int64(1),
		"conditions": []any{map[string]any{"type": "Degraded", "status": "True", "message": `Node worker-1 is reporting: "injected failure"`}}}

	paused := testPool(true, map[string]any{machineconfig.PausedUntilAnnotation: "2026-01-01T00:00:30Z"}, rolling)
	paused.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "machine-config-controller", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:configuration":{}}}`)}},
		{Manager: "virt-advisor-operator", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:paused":{}}}`)}},
	})

	for _, tc := range []struct {
		name      string
		pool      *unstructured.Unstructured
		state     string
		tone      string
		cells     string
		pausedBy  string
		nodesNote string
	}{
		{"rolling", testPool(false, nil, rolling), "Updating (1 of 3 nodes updated)", "info", "updated updating waiting", "", "no Node matches"},
		{"done", testPool(false, nil, done), "Updated (3 of 3 nodes)", "ok", "updated updated updated", "", "no Node matches"},
		{"degraded", testPool(false, nil, degraded), "Degraded (1 of 3 nodes)", "bad", "updated degraded waiting", "", "no Node matches"},
		{"paused by virt-advisor: no node in flight", paused, "Paused (1 of 3 nodes updated)", "warn", "updated waiting waiting", "virt-advisor-operator", "no Node matches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGridPool(tc.pool, []string{"99-worker-psi-karg"}, nil, "")
			if g.State != tc.state || g.Tone != tc.tone {
				t.Errorf("state %q %q, want %q %q", g.State, g.Tone, tc.state, tc.tone)
			}
			if got := states(g.Nodes); got != tc.cells {
				t.Errorf("cells %q, want %q", got, tc.cells)
			}
			if g.PausedBy != tc.pausedBy {
				t.Errorf("paused by %q, want %q", g.PausedBy, tc.pausedBy)
			}
			if !strings.Contains(g.NodesNote, tc.nodesNote) {
				t.Errorf("note %q", g.NodesNote)
			}
		})
	}
	g := newGridPool(testPool(false, nil, done), nil, nil, `user "bob" may not list nodes`)
	if !strings.Contains(g.NodesNote, `user "bob" may not list nodes`) {
		t.Errorf("note %q", g.NodesNote)
	}
}

func TestDiffLines(t *testing.T) {
	lines, added, removed := diffLines("--- a\n+++ b\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n+more\n")
	kinds := make([]string, len(lines))
	for i, l := range lines {
		kinds[i] = l.Kind
	}
	if want := []string{"file", "file", "hunk", "ctx", "del", "add", "add"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if added != 2 || removed != 1 {
		t.Errorf("+%d -%d", added, removed)
	}
	if l, _, _ := diffLines(""); l != nil {
		t.Errorf("empty diff: %v", l)
	}
}

// TestGridFollowsTheConfigsItems: a pool whose nodes all run its current
// config is not shown "Updated" for a change of this config that is not
// written yet, or not rendered yet.
func TestGridFollowsTheConfigsItems(t *testing.T) {
	done := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(3), "configuration": map[string]any{"name": "rendered-worker-new"}}
	rolling := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1), "unavailableMachineCount": int64(1),
		"configuration": map[string]any{"name": "rendered-worker-old"}}
	degraded := map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1), "degradedMachineCount": int64(1), "unavailableMachineCount": int64(1)}
	mc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"}
	item := func(state v1alpha1.ItemState, before string) v1alpha1.VirtPlatformConfigItem {
		it := v1alpha1.VirtPlatformConfigItem{Name: "enable-psi-metrics", TargetRef: mc, Operation: v1alpha1.OperationCreate, State: state,
			Message: "Waiting: MachineConfigPool 'worker': window 'weekend' opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d10h; the change is written when it opens"}
		if before != "" {
			it.PoolConfigsBefore = []v1alpha1.PoolConfiguration{{Pool: "worker", Configuration: before}}
		}
		return it
	}
	second := item(v1alpha1.ItemStatePending, "")
	second.Name, second.TargetRef.Name = "second", "98-worker-other"
	for _, tc := range []struct {
		name        string
		status      map[string]any
		items       []v1alpha1.VirtPlatformConfigItem
		state, tone string
		message     string
		cells       string
	}{
		{"approved, waiting for a window: not started, nodes wait", done, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStatePending, "")},
			"Not started: nothing written yet (3 nodes on rendered-worker-new)", "neutral", "window 'weekend' opens", "waiting waiting waiting"},
		{"written, not rendered yet", done, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStateInProgress, "rendered-worker-new")},
			"Written; not rendered yet (3 nodes on rendered-worker-new)", "info", "has not rendered a config with it yet", "waiting waiting waiting"},
		{"rolled out", done, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStateCompleted, "rendered-worker-old")},
			"Updated (3 of 3 nodes)", "ok", "runs rendered-worker-new", "updated updated updated"},
		{"rolling out", rolling, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStateInProgress, "rendered-worker-old")},
			"Updating (1 of 3 nodes updated)", "info", "", "updated updating waiting"},
		{"one change rolled out, another not written", done, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStateCompleted, "rendered-worker-old"), second},
			"1 of 2 changes written (3 of 3 nodes updated)", "info", "window 'weekend' opens", "updated updated updated"},
		{"degraded says more", degraded, []v1alpha1.VirtPlatformConfigItem{item(v1alpha1.ItemStatePending, "")},
			"Degraded (1 of 3 nodes)", "bad", "", "updated degraded waiting"},
		{"no item of ours (nothing to write): as the pool is", done, nil, "Updated (3 of 3 nodes)", "ok", "", "updated updated updated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGridPool(testPool(false, nil, tc.status), []string{"99-worker-psi-karg", "98-worker-other"}, nil, "")
			g.followItems(itemsRolledBy(tc.items, g.Configs))
			if g.State != tc.state || g.Tone != tc.tone || !strings.Contains(g.Message, tc.message) {
				t.Errorf("state %q %q %q, want %q %q containing %q", g.State, g.Tone, g.Message, tc.state, tc.tone, tc.message)
			}
			if got := states(g.Nodes); got != tc.cells {
				t.Errorf("cells %q, want %q", got, tc.cells)
			}
		})
	}
}

// TestHeldByAbort: the pool of an aborted plan is paused until a plan is
// approved again, not until the time its pause annotation says; a pause
// that is not ours (no annotation) says nothing of it.
func TestHeldByAbort(t *testing.T) {
	for _, tc := range []struct {
		name      string
		g         gridPool
		wantUntil string
	}{
		{"our pause", gridPool{Paused: true, PausedUntil: "2026-01-01T00:00:30Z"}, "an approver approves a plan of this config or the config is deleted (plan cdcdcdcdcdcd was aborted by bob)"},
		{"an administrator's pause", gridPool{Paused: true, PausedBy: "admin"}, ""},
		{"not paused", gridPool{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.g.heldByAbort(&v1alpha1.AbortRecord{PlanHash: strings.Repeat("cd", 32), AbortedBy: "bob"})
			if tc.g.PausedUntil != tc.wantUntil {
				t.Errorf("paused until %q, want %q", tc.g.PausedUntil, tc.wantUntil)
			}
		})
	}
}
