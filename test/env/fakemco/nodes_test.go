package fakemco

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nodeCluster drives the node model with a clock: pass runs one pass of
// stepNodes, run passes from wake to wake.
type nodeCluster struct {
	t     *testing.T
	p     poolView
	nodes []nodeView
	maxU  int
	now   time.Time
	wake  time.Time
	// most is the most nodes unavailable at once seen; order the nodes in
	// the order they were targeted.
	most  int
	order []string
}

const testStep = time.Second

func newNodeCluster(t *testing.T, n, maxU int) *nodeCluster {
	c := &nodeCluster{t: t, p: view(), maxU: maxU, now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	for i := range n {
		c.nodes = append(c.nodes, nodeView{Name: fmt.Sprintf("worker-%d", i), Ready: true})
	}
	return c
}

func (c *nodeCluster) pass() {
	before := c.nodes
	c.nodes, c.wake = stepNodes(c.p, c.nodes, c.maxU, c.now, testStep)
	unavailable := 0
	for i, n := range c.nodes {
		if n.unavailable() {
			unavailable++
		}
		if n.Desired != before[i].Desired && n.Desired != n.Current { // targeted, not adopted
			c.order = append(c.order, n.Name)
		}
	}
	c.most = max(c.most, unavailable)
}

// run passes until nothing moves by itself (or a bound); it returns the
// time it took.
func (c *nodeCluster) run() time.Duration {
	start := c.now
	c.pass()
	for i := 0; i < 100 && !c.wake.IsZero(); i++ {
		c.now = c.wake
		c.pass()
	}
	if !c.wake.IsZero() {
		c.t.Fatalf("the model did not settle: %+v", c.nodes)
	}
	return c.now.Sub(start)
}

// runFor passes until d has gone by.
func (c *nodeCluster) runFor(d time.Duration) {
	end := c.now.Add(d)
	c.pass()
	for !c.wake.IsZero() && !c.wake.After(end) {
		c.now = c.wake
		c.pass()
	}
	c.now = end
}

func (c *nodeCluster) counts() machineCounts { return nodeCounts(c.nodes, c.p.specName()) }

// states is "name:current/state[,cordoned][,NotReady]" of every node.
func (c *nodeCluster) states() string {
	var out []string
	for _, n := range c.nodes {
		s := fmt.Sprintf("%s:%s/%s", n.Name, strings.TrimPrefix(n.Current, "rendered-worker-"), n.State)
		if n.Unschedulable {
			s += ",cordoned"
		}
		if !n.Ready {
			s += ",NotReady"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func (c *nodeCluster) wantCounts(updated, ready, unavailable, degraded int64) {
	c.t.Helper()
	got := c.counts()
	if got.Updated != updated || got.Ready != ready || got.Unavailable != unavailable || got.Degraded != degraded {
		c.t.Errorf("updated ready unavailable degraded = %d %d %d %d, want %d %d %d %d (%s)",
			got.Updated, got.Ready, got.Unavailable, got.Degraded, updated, ready, unavailable, degraded, c.states())
	}
}

func (c *nodeCluster) wantStates(want string) {
	c.t.Helper()
	if got := c.states(); got != want {
		c.t.Errorf("nodes\n got %s\nwant %s", got, want)
	}
}

func TestNodeRolloutOneAtATime(t *testing.T) {
	c := newNodeCluster(t, 3, 1)
	c.pass() // adopts the nodes on the pool's old config, targets worker-0
	c.wantStates("worker-0:old/Working,cordoned worker-1:old/Done worker-2:old/Done")
	c.wantCounts(0, 0, 1, 0)
	c.runFor(testStep / 2)
	c.wantStates("worker-0:old/Working,cordoned,NotReady worker-1:old/Done worker-2:old/Done")
	c.runFor(testStep / 2)
	c.wantStates("worker-0:new/Done worker-1:old/Working,cordoned worker-2:old/Done")
	c.wantCounts(1, 1, 1, 0)
	took := c.run()
	c.wantStates("worker-0:new/Done worker-1:new/Done worker-2:new/Done")
	c.wantCounts(3, 3, 0, 0)
	if c.most != 1 || strings.Join(c.order, ",") != "worker-0,worker-1,worker-2" || took != 2*testStep {
		t.Errorf("at most %d unavailable, order %v, the rest took %s", c.most, c.order, took)
	}
	st := statusOf(c.p, c.counts(), c.now)
	if conds := condMap(st); conds["Updated"] != "True All nodes are updated with MachineConfig rendered-worker-new" {
		t.Errorf("conditions %v", conds)
	}
	if st["configuration"].(map[string]any)["name"] != "rendered-worker-new" {
		t.Errorf("status.configuration %v", st["configuration"])
	}
}

func TestNodeRolloutMaxUnavailableTwo(t *testing.T) {
	c := newNodeCluster(t, 5, 2)
	c.pass()
	c.wantStates("worker-0:old/Working,cordoned worker-1:old/Working,cordoned worker-2:old/Done worker-3:old/Done worker-4:old/Done")
	st := statusOf(c.p, c.counts(), c.now)
	if conds := condMap(st); conds["Updating"] != "True All nodes are updating to MachineConfig rendered-worker-new" ||
		st["configuration"].(map[string]any)["name"] != "rendered-worker-old" {
		t.Errorf("mid-rollout status %v", st)
	}
	took := c.run()
	c.wantCounts(5, 5, 0, 0)
	if c.most != 2 || took != 3*testStep {
		t.Errorf("at most %d unavailable, took %s; want 2 and 3 steps", c.most, took)
	}
}

func TestNodeRolloutPause(t *testing.T) {
	c := newNodeCluster(t, 3, 1)
	c.pass()
	c.p.Paused = true
	c.runFor(testStep / 2)
	c.wantStates("worker-0:old/Working,cordoned,NotReady worker-1:old/Done worker-2:old/Done")
	c.run() // the node in flight finishes, no other starts
	c.wantStates("worker-0:new/Done worker-1:old/Done worker-2:old/Done")
	c.wantCounts(1, 1, 0, 0)
	if conds := condMap(statusOf(c.p, c.counts(), c.now)); conds["Updating"] != "False Pool is paused; will not update to MachineConfig rendered-worker-new" {
		t.Errorf("paused conditions %v", conds)
	}
	c.runFor(time.Hour)
	c.wantStates("worker-0:new/Done worker-1:old/Done worker-2:old/Done")
	c.p.Paused = false
	c.run()
	c.wantCounts(3, 3, 0, 0)
	if c.most != 1 {
		t.Errorf("at most %d unavailable", c.most)
	}
}

func TestNodeRolloutNotReadyAfterReboot(t *testing.T) {
	c := newNodeCluster(t, 3, 1)
	c.nodes[1].StayNotReady = true
	c.run() // halts: worker-1 is updated but NotReady, unavailable
	c.wantStates("worker-0:new/Done worker-1:new/Done,NotReady worker-2:old/Done")
	c.wantCounts(2, 1, 1, 0)
	c.runFor(time.Hour)
	c.wantStates("worker-0:new/Done worker-1:new/Done,NotReady worker-2:old/Done")
	c.nodes[1].StayNotReady = false // the annotation is removed
	c.run()
	c.wantStates("worker-0:new/Done worker-1:new/Done worker-2:new/Done")
	c.wantCounts(3, 3, 0, 0)

	// With room for two, the NotReady node halts nothing.
	c = newNodeCluster(t, 3, 2)
	c.nodes[0].StayNotReady = true
	c.run()
	c.wantStates("worker-0:new/Done,NotReady worker-1:new/Done worker-2:new/Done")
	c.wantCounts(3, 2, 1, 0)
	if conds := condMap(statusOf(c.p, c.counts(), c.now)); !strings.HasPrefix(conds["Updated"], "False") {
		t.Errorf("a NotReady node, yet Updated: %v", conds)
	}
}

func TestNodeRolloutDegradedAfterReboot(t *testing.T) {
	c := newNodeCluster(t, 3, 1)
	c.nodes[1].Degrade, c.nodes[1].DegradeReason = true, "unexpected on-disk state"
	c.run() // halts: worker-1 failed its update and stays cordoned
	c.wantStates("worker-0:new/Done worker-1:old/Degraded,cordoned worker-2:old/Done")
	c.wantCounts(1, 1, 1, 1)
	st := statusOf(c.p, c.counts(), c.now)
	conds := condMap(st)
	wantMsg := `True Node worker-1 is reporting: "unexpected on-disk state"`
	if conds["Degraded"] != wantMsg || conds["NodeDegraded"] != wantMsg {
		t.Errorf("degraded conditions %v", conds)
	}
	if c.nodes[1].Reason != "unexpected on-disk state" || c.nodes[1].Desired != "rendered-worker-new" {
		t.Errorf("worker-1 %+v", c.nodes[1])
	}
	c.nodes[1].Degrade = false // the annotation is removed: the daemon retries
	c.run()
	c.wantStates("worker-0:new/Done worker-1:new/Done worker-2:new/Done")
	c.wantCounts(3, 3, 0, 0)

	// Without a reason the message is the default one.
	c = newNodeCluster(t, 1, 1)
	c.nodes[0].Degrade = true
	c.run()
	if c.nodes[0].Reason != DegradedMessage {
		t.Errorf("reason %q", c.nodes[0].Reason)
	}
}

func TestNodeModelIdle(t *testing.T) {
	c := newNodeCluster(t, 2, 1)
	c.p.StatusConfig = c.p.SpecConfig // rolled out: nodes are adopted on it
	c.pass()
	c.wantStates("worker-0:new/Done worker-1:new/Done")
	if !c.wake.IsZero() || len(c.order) != 0 {
		t.Errorf("an idle pool moves: wake %v, targeted %v", c.wake, c.order)
	}
	// Someone else's cordon and NotReady are left alone, and count.
	c.nodes[0].Unschedulable, c.nodes[1].Ready = true, false
	c.pass()
	c.wantStates("worker-0:new/Done,cordoned worker-1:new/Done,NotReady")
	c.wantCounts(2, 0, 2, 0)
	// A pool with no nodes is done at once.
	if got := statusOf(c.p, nodeCounts(nil, "rendered-worker-new"), c.now); got["updatedMachineCount"] != int64(0) ||
		!strings.HasPrefix(condMap(got)["Updated"], "True") {
		t.Errorf("empty pool status %v", got)
	}
}

func TestNodeRolloutRetarget(t *testing.T) {
	// A new config mid-rollout: the node in flight finishes its update,
	// then every node moves to the newer config.
	c := newNodeCluster(t, 2, 1)
	c.pass()
	c.p.SpecConfig = map[string]any{"name": "rendered-worker-newer"}
	c.run()
	c.wantStates("worker-0:newer/Done worker-1:newer/Done")
	if strings.Join(c.order, ",") != "worker-0,worker-0,worker-1" {
		t.Errorf("order %v", c.order)
	}
}

func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		v     any
		nodes int
		want  int
	}{
		{nil, 3, 1}, {int64(2), 3, 2}, {float64(3), 5, 3}, {int64(0), 3, 1},
		{"50%", 4, 2}, {"50%", 3, 1}, {"10%", 3, 1}, {"100%", 6, 6}, {"2", 5, 2}, {"x", 5, 1},
	} {
		if got := maxUnavailable(tc.v, tc.nodes); got != tc.want {
			t.Errorf("maxUnavailable(%v, %d) = %d, want %d", tc.v, tc.nodes, got, tc.want)
		}
	}
}

// What the model writes on a Node reads back the same.
func TestNodeViewRoundTrip(t *testing.T) {
	started := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, n := range []nodeView{
		{Name: "a", Current: "r1", Desired: "r1", State: StateDone, Ready: true},
		{Name: "b", Current: "r1", Desired: "r2", State: StateWorking, Unschedulable: true, Cordoned: true, Started: started},
		{Name: "c", Current: "r2", Desired: "r2", State: StateDone, HeldNotReady: true, StayNotReady: true},
		{Name: "d", Current: "r1", Desired: "r2", State: StateDegraded, Reason: "boom", Ready: true, Unschedulable: true, Cordoned: true,
			Started: started, Degrade: true, DegradeReason: "boom"},
	} {
		annotations := map[string]any{}
		for k, v := range nodeAnnotations(n) {
			if v != nil {
				annotations[k] = v
			}
		}
		if n.StayNotReady {
			annotations[NotReadyAfterRebootAnnotation] = "true"
		}
		if n.Degrade {
			annotations[DegradeAfterRebootAnnotation] = n.DegradeReason
		}
		status := "True"
		if !n.Ready {
			status = "False"
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": n.Name, "annotations": annotations},
			"spec":     map[string]any{"unschedulable": n.Unschedulable},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}}},
		}}
		if got := newNodeView(u); !reflect.DeepEqual(got, n) {
			t.Errorf("read back\n got %+v\nwant %+v", got, n)
		}
	}
	// A Node with no Ready condition (no kubelet here) is Ready.
	if n := newNodeView(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}); !n.Ready {
		t.Error("a Node without conditions reads NotReady")
	}
}
