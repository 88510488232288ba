package capacity

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// oneByOne is the simulation as its model states it, VM by VM: largest
// memory first, the VMs of a class together (in the order their class
// first comes), each on the first node it may run on with room; a VM that
// finds none stays on the node it is on now. Simulate places the VMs of a
// class as many at a time as a node holds; both must agree.
func oneByOne(nodes []*corev1.Node, vms []VM, order []string, step int) (moved []int64, unfit map[string]int) {
	s := newState(cluster(nodes, vms), Classify(vms))
	on := map[*nodeState][]*VM{} // in the order they came
	classOf := map[*VM]*class{}
	for _, n := range s.nodes {
		for _, c := range n.vms {
			for _, v := range c.vms {
				on[n] = append(on[n], v)
				classOf[v] = c.class
			}
		}
	}
	unfit = map[string]int{}
	for i := 0; i < len(order); i += step {
		batch := order[i:min(i+step, len(order))]
		var moving []*VM
		var mem int64
		from := map[*VM]*nodeState{}
		for _, name := range batch {
			n := s.byName[name]
			n.draining = true
			for _, v := range on[n] {
				moving = append(moving, v)
				from[v] = n
				mem += classOf[v].req[s.memory]
			}
			on[n] = nil
		}
		moved = append(moved, mem)
		rank := map[*class]int{}
		for _, v := range moving {
			if _, ok := rank[classOf[v]]; !ok {
				rank[classOf[v]] = len(rank)
			}
		}
		sort.SliceStable(moving, func(i, j int) bool {
			a, b := classOf[moving[i]], classOf[moving[j]]
			if a.req[s.memory] != b.req[s.memory] {
				return a.req[s.memory] > b.req[s.memory]
			}
			return rank[a] < rank[b]
		})
		for _, v := range moving {
			placed := false
			for _, n := range s.allowed(classOf[v]) {
				if n.target() && n.free.count(classOf[v].req) > 0 {
					n.free.take(classOf[v].req, 1)
					on[n] = append(on[n], v)
					placed = true
					break
				}
			}
			if !placed {
				unfit[fmt.Sprintf("%d GiB on %s", classOf[v].req[s.memory]>>30, from[v].Name)]++
				on[from[v]] = append(on[from[v]], v)
			}
		}
		for _, name := range batch {
			n := s.byName[name]
			n.draining = false
			n.free = append(amounts(nil), n.base...)
			for _, v := range on[n] {
				n.free.take(classOf[v].req, 1)
			}
		}
	}
	return moved, unfit
}

// TestSimulatePlacesAClassAsOneByOne: on random clusters (VMs of a few
// sizes, some needing a GPU few nodes have, nodes of different sizes and
// some full), Simulate finds the same VMs without room, on the same
// nodes, and the same memory moved by each drain as placing VM by VM.
func TestSimulatePlacesAClassAsOneByOne(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		nodes, vms, order := randomCluster(r, 8, 7, true)
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		step := 1 + r.Intn(2)
		// A VM's node must hold it for the cluster to be real: drop those
		// that overfill their node.
		vms = fitting(nodes, vms)
		wantMoved, wantUnfit := oneByOne(nodes, vms, order, step)
		res := Simulate(cluster(nodes, vms), vms, Rollout{Pool: "worker", Nodes: order, MaxUnavailable: step})
		gotUnfit := map[string]int{}
		for _, u := range res.Unfit {
			gotUnfit[fmt.Sprintf("%d GiB on %s", memGiB(u.VM), u.on)]++
		}
		var maxMoved int64
		for _, m := range wantMoved {
			maxMoved = max(maxMoved, m)
		}
		if fmt.Sprint(gotUnfit) != fmt.Sprint(wantUnfit) || res.Moved != maxMoved {
			t.Fatalf("seed %d: Simulate found unfit %v, worst moving %d; one by one: %v, %d (moves %v)", seed, gotUnfit, res.Moved, wantUnfit, maxMoved, wantMoved)
		}
	}
}

// randomCluster draws from r at least 3 nodes of 16 to 96 GiB (fewer than
// 3+extraNodes, in order) and, on each, fewer than vmsPerNode VMs of 4, 8
// or 12 GiB; with gpus, about one node in four has a GPU and one VM in
// five needs one.
func randomCluster(r *rand.Rand, extraNodes, vmsPerNode int, gpus bool) (nodes []*corev1.Node, vms []VM, order []string) {
	for i := 0; i < 3+r.Intn(extraNodes); i++ {
		name := fmt.Sprintf("n%d", i)
		var opts []func(*corev1.Node)
		if gpus && r.Intn(4) == 0 {
			opts = append(opts, withGPU("nvidia.com/A100"))
		}
		nodes = append(nodes, node(name, int64(16*(1+r.Intn(6))), opts...))
		order = append(order, name)
		for j := 0; j < r.Intn(vmsPerNode); j++ {
			var popts []func(*corev1.Pod)
			if gpus && r.Intn(5) == 0 {
				popts = append(popts, needs("nvidia.com/A100"))
			}
			vms = append(vms, vm(fmt.Sprintf("vm-%d-%d", i, j), name, int64(4*(1+r.Intn(3))), popts...))
		}
	}
	return nodes, vms, order
}

// fitting keeps the VMs their nodes hold.
func fitting(nodes []*corev1.Node, vms []VM) []VM {
	left := map[string]int64{}
	for _, n := range nodes {
		q := n.Status.Allocatable[corev1.ResourceMemory]
		left[n.Name] = q.Value()
	}
	var out []VM
	for _, v := range vms {
		q := v.Launcher.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
		if left[v.Node] >= q.Value() {
			left[v.Node] -= q.Value()
			out = append(out, v)
		}
	}
	return out
}

func memGiB(v VM) int64 {
	q := v.Launcher.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	return q.Value() >> 30
}

// TestClassifiedServesManySimulations: VMs classified once give, for each
// state of the nodes in turn, what a simulation classifying them afresh
// gives; no simulation changes what the next one starts from.
func TestClassifiedServesManySimulations(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewSource(seed))
		nodes, vms, order := randomCluster(r, 6, 6, false)
		vms = fitting(nodes, vms)
		rollout := Rollout{Pool: "worker", Nodes: order, MaxUnavailable: 1 + r.Intn(2)}
		quiet := cluster(nodes, vms)
		// Another pod takes most of a node's memory.
		busy := cluster(nodes, vms)
		n := r.Intn(len(busy))
		busy[n].Requested = busy[n].Requested.DeepCopy()
		mem := busy[n].Requested[corev1.ResourceMemory]
		mem.Add(resource.MustParse("12Gi"))
		busy[n].Requested[corev1.ResourceMemory] = mem

		cv := Classify(vms)
		for i, state := range [][]Node{quiet, busy, quiet} {
			got, want := cv.Simulate(state, rollout), Simulate(state, vms, rollout)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, simulation %d: classified once %q, afresh %q", seed, i+1, got.Summary(), want.Summary())
			}
		}
	}
}
