package fakemco

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubevirt/virt-advisor/test/names"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

func machineConfig(name string, lbls map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcoAPIVersion, "kind": "MachineConfig",
		"metadata": map[string]any{"name": name},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	u.SetLabels(lbls)
	return u
}

var workerRole = map[string]string{"machineconfiguration.openshift.io/role": "worker"}

func baseWorker() *unstructured.Unstructured {
	return machineConfig("00-worker", workerRole, map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}})
}

func kargs(name string, args ...any) *unstructured.Unstructured {
	return machineConfig(name, workerRole, map[string]any{"kernelArguments": args})
}

func workerPool(selector map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcoAPIVersion, "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": "worker"},
		"spec":     map[string]any{},
	}}
	if selector != nil {
		u.Object["spec"].(map[string]any)["machineConfigSelector"] = selector
	}
	return u
}

func mcNames(mcs []*unstructured.Unstructured) []string {
	out := []string{}
	for _, mc := range mcs {
		out = append(out, mc.GetName())
	}
	return out
}

func TestSelectConfigs(t *testing.T) {
	all := []*unstructured.Unstructured{
		kargs("99-worker-b", "b=1"),
		baseWorker(),
		machineConfig("00-master", map[string]string{"machineconfiguration.openshift.io/role": "master"}, nil),
		kargs("rendered-worker-0123", "x=1"), // never an input, even when labelled
		kargs("50-worker-a", "a=1"),
		machineConfig("10-unlabelled", nil, nil),
	}
	for _, tc := range []struct {
		name     string
		selector map[string]any
		want     []string
	}{
		{"matchLabels, sorted by name", map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
			[]string{"00-worker", "50-worker-a", "99-worker-b"}},
		{"matchExpressions", map[string]any{"matchExpressions": []any{map[string]any{
			"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": []any{"worker", "master"}}}},
			[]string{"00-master", "00-worker", "50-worker-a", "99-worker-b"}},
		{"no selector selects nothing", nil, []string{}},
		{"empty selector selects every non-rendered one", map[string]any{},
			[]string{"00-master", "00-worker", "10-unlabelled", "50-worker-a", "99-worker-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := poolSelector(workerPool(tc.selector))
			if err != nil {
				t.Fatal(err)
			}
			if got := mcNames(selectConfigs(sel, all)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("selected %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRenderedName(t *testing.T) {
	hash := func(mcs ...*unstructured.Unstructured) string {
		t.Helper()
		h, err := inputsHash(selectConfigs(labels.Everything(), mcs))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash(baseWorker())
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("hash %q: want 32 hex digits", base)
	}
	if again := hash(baseWorker()); again != base {
		t.Errorf("not deterministic: %s then %s", base, again)
	}
	if got, want := renderedName("worker", base), "rendered-worker-"+base; got != want {
		t.Errorf("renderedName = %s, want %s", got, want)
	}
	withPSI := hash(baseWorker(), kargs("99-worker-test", "psi=1"))
	if withPSI == base {
		t.Error("adding a MachineConfig did not change the hash")
	}
	if got := hash(kargs("99-worker-test", "psi=1"), baseWorker()); got != withPSI {
		t.Error("the hash depends on the listing order, not on name order")
	}
	if got := hash(baseWorker(), kargs("99-worker-test", "psi=0")); got == withPSI {
		t.Error("changing kernelArguments did not change the hash")
	}
	if got := hash(baseWorker(), kargs("99-worker-test", "psi=1"), kargs("rendered-worker-x", "y")); got != withPSI {
		t.Error("a rendered-* MachineConfig changed the inputs")
	}
	// Labels and metadata are not content.
	relabelled := kargs("99-worker-test", "psi=1")
	relabelled.SetAnnotations(map[string]string{"a": "b"})
	if got := hash(baseWorker(), relabelled); got != withPSI {
		t.Error("metadata changed the hash")
	}
}

func TestMergeSpecs(t *testing.T) {
	got := mergeSpecs([]*unstructured.Unstructured{
		baseWorker(),
		kargs("50-a", "a=1", "b=2"),
		machineConfig("60-cfg", workerRole, map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.4.0"}}, "kernelType": "realtime"}),
		kargs("99-z", "psi=1"),
		machineConfig("99-zz-empty", workerRole, map[string]any{"config": map[string]any{}}),
	})
	want := map[string]any{
		"kernelArguments": []any{"a=1", "b=2", "psi=1"},
		"config":          map[string]any{"ignition": map[string]any{"version": "3.4.0"}},
		"kernelType":      "realtime",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
}

func TestPlanRender(t *testing.T) {
	sel := []*unstructured.Unstructured{baseWorker()}
	baseHash, _ := inputsHash(sel)
	baseName := renderedName("worker", baseHash)
	withPSI := []*unstructured.Unstructured{baseWorker(), kargs("99-worker-test", "psi=1")}
	psiHash, _ := inputsHash(withPSI)
	psiName := renderedName("worker", psiHash)
	const placeholder = "rendered-worker-00000000000000000000000000000000"

	cfg := func(name string, sources ...string) map[string]any {
		src := []any{}
		for _, s := range sources {
			src = append(src, map[string]any{"apiVersion": mcoAPIVersion, "kind": "MachineConfig", "name": s})
		}
		return map[string]any{"name": name, "source": src}
	}
	rendered := func(m map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) { h, ok := m[n]; return h, ok }
	}
	for _, tc := range []struct {
		name     string
		spec     map[string]any
		selected []*unstructured.Unstructured
		existing map[string]string // rendered MachineConfig → recorded hash
		action   renderAction
		planName string
	}{
		{"up to date", cfg(baseName, "00-worker"), sel, map[string]string{baseName: baseHash}, renderNothing, baseName},
		{"up to date, rendered object missing", cfg(baseName, "00-worker"), sel, nil, renderCreateObject, baseName},
		{"baseline placeholder over the same sources is adopted", cfg(placeholder, "00-worker"), sel, nil, renderCreateObject, placeholder},
		{"adopted placeholder stays", cfg(placeholder, "00-worker"), sel, map[string]string{placeholder: baseHash}, renderNothing, baseName},
		{"placeholder over other sources is rendered", cfg(placeholder, "00-worker", "01-gone"), sel, nil, renderWriteSpec, baseName},
		{"new MachineConfig", cfg(baseName, "00-worker"), withPSI, map[string]string{baseName: baseHash}, renderWriteSpec, psiName},
		{"new MachineConfig after adoption", cfg(placeholder, "00-worker"), withPSI, map[string]string{placeholder: baseHash}, renderWriteSpec, psiName},
		{"content changed, same sources", cfg(psiName, "00-worker", "99-worker-test"),
			[]*unstructured.Unstructured{baseWorker(), kargs("99-worker-test", "psi=0")}, map[string]string{psiName: psiHash}, renderWriteSpec, ""},
		{"MachineConfig removed", cfg(psiName, "00-worker", "99-worker-test"), sel, map[string]string{psiName: psiHash}, renderWriteSpec, baseName},
		{"never rendered", nil, sel, nil, renderWriteSpec, baseName},
		{"nothing selected", cfg(baseName, "00-worker"), nil, nil, renderNothing, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := planRender("worker", tc.spec, tc.selected, rendered(tc.existing))
			if err != nil {
				t.Fatal(err)
			}
			if plan.Action != tc.action {
				t.Errorf("action %d, want %d", plan.Action, tc.action)
			}
			if tc.planName != "" && plan.Name != tc.planName && plan.Action != renderNothing {
				t.Errorf("name %s, want %s", plan.Name, tc.planName)
			}
			if plan.Action == renderWriteSpec {
				if plan.Configuration["name"] != plan.Name || !strings.HasPrefix(plan.Name, "rendered-worker-") {
					t.Errorf("configuration %v for %s", plan.Configuration, plan.Name)
				}
				if got, want := sourceNames(plan.Configuration), mcNames(tc.selected); !reflect.DeepEqual(got, want) {
					t.Errorf("source %v, want %v", got, want)
				}
			}
		})
	}
	// The rendered object carries what readers need.
	plan, _ := planRender("worker", cfg(baseName, "00-worker"), withPSI, rendered(nil))
	pool := workerPool(nil)
	pool.SetUID("uid-1")
	mc := renderedMachineConfig(pool, plan)
	if got, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments"); !reflect.DeepEqual(got, []string{"psi=1"}) {
		t.Errorf("rendered kernelArguments %v", got)
	}
	if mc.GetName() != psiName || mc.GetAnnotations()[fakeMCOInputsAnnotation] != psiHash {
		t.Errorf("rendered object %s %v", mc.GetName(), mc.GetAnnotations())
	}
	if refs := mc.GetOwnerReferences(); len(refs) != 1 || refs[0].Name != "worker" || refs[0].UID != "uid-1" {
		t.Errorf("owner references %v", refs)
	}
}

// view is a pool rolling out "new" over "old" (3 machines).
func view(mut ...func(*poolView)) poolView {
	p := poolView{
		Name: "worker", Generation: 2, Machines: 3, Updated: 3,
		SpecConfig:   map[string]any{"name": "rendered-worker-new", "source": []any{map[string]any{"name": "00-worker"}, map[string]any{"name": "99-worker-test"}}},
		StatusConfig: map[string]any{"name": "rendered-worker-old", "source": []any{map[string]any{"name": "00-worker"}}},
	}
	for _, m := range mut {
		m(&p)
	}
	return p
}

func condMap(status map[string]any) map[string]string {
	out := map[string]string{}
	for _, c := range status["conditions"].([]any) {
		m := c.(map[string]any)
		out[m["type"].(string)] = m["status"].(string) + " " + m["message"].(string)
	}
	return out
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	paused := func(p *poolView) { p.Paused = true }
	degraded := func(p *poolView) { p.Degraded = true }
	updating := "True All nodes are updating to MachineConfig rendered-worker-new"
	notDegraded := map[string]string{"Degraded": "False ", "NodeDegraded": "False ", "RenderDegraded": "False "}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range notDegraded {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name                           string
		p                              poolView
		k                              int64
		updated, unavailable, degraded int64
		config                         string
		conds                          map[string]string
	}{
		{"step 0 of 3", view(), 0, 0, 1, 0, "rendered-worker-old", with(map[string]string{"Updated": "False ", "Updating": updating})},
		{"step 1 of 3", view(), 1, 1, 1, 0, "rendered-worker-old", with(map[string]string{"Updated": "False ", "Updating": updating})},
		{"step 2 of 3", view(), 2, 2, 1, 0, "rendered-worker-old", with(map[string]string{"Updated": "False ", "Updating": updating})},
		{"step 3 of 3: done", view(), 3, 3, 0, 0, "rendered-worker-new",
			with(map[string]string{"Updated": "True All nodes are updated with MachineConfig rendered-worker-new", "Updating": "False "})},
		{"beyond n is clamped", view(), 7, 3, 0, 0, "rendered-worker-new",
			with(map[string]string{"Updated": "True All nodes are updated with MachineConfig rendered-worker-new", "Updating": "False "})},
		{"paused at 1 of 3", view(paused), 1, 1, 0, 0, "rendered-worker-old",
			with(map[string]string{"Updated": "False ", "Updating": "False Pool is paused; will not update to MachineConfig rendered-worker-new"})},
		{"paused, nothing pending", view(paused), 3, 3, 0, 0, "rendered-worker-new",
			with(map[string]string{"Updated": "True All nodes are updated with MachineConfig rendered-worker-new", "Updating": "False "})},
		{"degraded at 1 of 3", view(degraded), 1, 1, 1, 1, "rendered-worker-old",
			with(map[string]string{"Updated": "False ", "Updating": updating},
				"Degraded", `True Node worker-1 is reporting: "injected failure"`,
				"NodeDegraded", `True Node worker-1 is reporting: "injected failure"`)},
		{"degraded and paused", view(degraded, paused), 2, 2, 0, 1, "rendered-worker-old",
			with(map[string]string{"Updated": "False ", "Updating": "False Pool is paused; will not update to MachineConfig rendered-worker-new"},
				"Degraded", `True Node worker-2 is reporting: "injected failure"`,
				"NodeDegraded", `True Node worker-2 is reporting: "injected failure"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(tc.p, tc.k, now)
			got := fmt.Sprint(st["observedGeneration"], st["machineCount"], st["updatedMachineCount"], st["readyMachineCount"], st["unavailableMachineCount"], st["degradedMachineCount"])
			want := fmt.Sprint(int64(2), int64(3), tc.updated, tc.updated, tc.unavailable, tc.degraded)
			if got != want {
				t.Errorf("observedGeneration machineCount updated ready unavailable degraded = %s, want %s", got, want)
			}
			if name := st["configuration"].(map[string]any)["name"]; name != tc.config {
				t.Errorf("status.configuration.name %v, want %s", name, tc.config)
			}
			if c := condMap(st); !reflect.DeepEqual(c, tc.conds) {
				t.Errorf("conditions\n got %v\nwant %v", c, tc.conds)
			}
		})
	}
}

// The status seeded by the environment is exactly what the fake MCO
// computes for an idle pool: starting it writes nothing, and unchanged
// conditions keep their lastTransitionTime.
func TestComputeStatusMatchesSeed(t *testing.T) {
	seeded := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pool := workerPool(nil)
	pool.SetGeneration(1)
	cfg := map[string]any{"name": "rendered-worker-00000000000000000000000000000000", "source": []any{map[string]any{"apiVersion": mcoAPIVersion, "kind": "MachineConfig", "name": "00-worker"}}}
	_ = unstructured.SetNestedMap(pool.Object, cfg, "spec", "configuration")
	seed := computeStatus(poolView{Name: "worker", Generation: 1, Machines: 3, SpecConfig: cfg, StatusConfig: cfg}, 3, seeded)
	pool.Object["status"] = seed

	p := newPoolView(pool)
	w, wake := advance(p, walk{}, seeded.Add(time.Hour), time.Second)
	if w.Target != "rendered-worker-00000000000000000000000000000000" || w.Updated != 3 || !wake.IsZero() {
		t.Errorf("idle pool: walk %+v wake %v", w, wake)
	}
	if st := computeStatus(p, w.Updated, seeded.Add(time.Hour)); statusChanged(pool, st) {
		t.Errorf("idle pool would be rewritten: %v", st)
	}
	// A change keeps the lastTransitionTime of conditions whose status stays.
	p.Degraded = true
	st := computeStatus(p, 3, seeded.Add(time.Hour))
	for _, c := range st["conditions"].([]any) {
		m := c.(map[string]any)
		wantLTT := seeded.Format(time.RFC3339)
		if m["type"] == "Degraded" || m["type"] == "NodeDegraded" {
			wantLTT = seeded.Add(time.Hour).Format(time.RFC3339)
		}
		if m["lastTransitionTime"] != wantLTT {
			t.Errorf("%v lastTransitionTime %v, want %s", m["type"], m["lastTransitionTime"], wantLTT)
		}
	}
}

func TestAdvance(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	const step = 100 * time.Millisecond
	type want struct {
		updated int64
		target  string
		wake    time.Duration // from now; -1: none
	}
	paused := func(p *poolView) { p.Paused = true }
	degraded := func(p *poolView) { p.Degraded = true }
	for _, tc := range []struct {
		name string
		p    poolView
		w    walk
		at   time.Duration
		want want
	}{
		{"new target starts at 0, first node done after a step", view(), walk{}, 0, want{0, "rendered-worker-new", step}},
		{"not due yet", view(), walk{Target: "rendered-worker-new", Next: t0.Add(step)}, step / 2, want{0, "rendered-worker-new", step / 2}},
		{"due: one more node", view(), walk{Target: "rendered-worker-new", Updated: 1, Next: t0}, 0, want{2, "rendered-worker-new", step}},
		{"last node: done", view(), walk{Target: "rendered-worker-new", Updated: 2, Next: t0}, 0, want{3, "rendered-worker-new", -1}},
		{"done stays done", view(), walk{Target: "rendered-worker-new", Updated: 3}, 0, want{3, "rendered-worker-new", -1}},
		{"spec change mid-rollout restarts", view(), walk{Target: "rendered-worker-older", Updated: 2, Next: t0}, 0, want{0, "rendered-worker-new", step}},
		{"paused: no start", view(paused), walk{}, 0, want{0, "rendered-worker-new", -1}},
		{"paused: the node in flight finishes, no other starts", view(paused), walk{Target: "rendered-worker-new", Updated: 1, Next: t0}, 0, want{2, "rendered-worker-new", -1}},
		{"paused: the node in flight is not done yet", view(paused), walk{Target: "rendered-worker-new", Updated: 1, Next: t0.Add(step)}, step / 2, want{1, "rendered-worker-new", step / 2}},
		{"unpaused: the next node takes a full step", view(), walk{Target: "rendered-worker-new", Updated: 1}, 0, want{1, "rendered-worker-new", step}},
		{"degraded: no step", view(degraded), walk{Target: "rendered-worker-new", Updated: 2, Next: t0}, 0, want{2, "rendered-worker-new", -1}},
		{"idle pool first seen is adopted", view(func(p *poolView) { p.StatusConfig = p.SpecConfig }), walk{}, 0, want{3, "rendered-worker-new", -1}},
		{"pool first seen mid-rollout restarts", view(func(p *poolView) { p.StatusConfig = p.SpecConfig; p.Updated = 1 }), walk{}, 0, want{0, "rendered-worker-new", step}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.at)
			w, wake := advance(tc.p, tc.w, now, step)
			wantWake := time.Time{}
			if tc.want.wake >= 0 {
				wantWake = now.Add(tc.want.wake)
			}
			if w.Updated != tc.want.updated || w.Target != tc.want.target || !wake.Equal(wantWake) {
				t.Errorf("walk %+v wake %v, want updated %d target %s wake %v", w, wake, tc.want.updated, tc.want.target, wantWake)
			}
		})
	}
}

// A whole rollout through advance and computeStatus with a clock.
func TestRolloutSequence(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	const step = time.Second
	p := view()
	var w walk
	var seen []string
	for i := 0; i < 10; i++ {
		var wake time.Time
		w, wake = advance(p, w, now, step)
		st := computeStatus(p, w.Updated, now)
		c := condMap(st)
		seen = append(seen, fmt.Sprintf("%d/%d %s/%s", st["updatedMachineCount"], st["machineCount"], c["Updated"][:4], c["Updating"][:4]))
		if wake.IsZero() {
			break
		}
		now = wake
	}
	want := []string{"0/3 Fals/True", "1/3 Fals/True", "2/3 Fals/True", "3/3 True/Fals"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("rollout %v, want %v", seen, want)
	}
}

func TestTimersStop(t *testing.T) {
	c := newPoolController(&fakeMCO{o: Options{}.withDefaults()})
	defer c.queue.ShutDown()
	c.schedule("a", time.Now().Add(time.Hour))
	c.schedule("a", time.Now().Add(10*time.Millisecond)) // re-armed
	c.schedule("b", time.Now().Add(time.Hour))
	c.schedule("c", time.Now().Add(time.Hour))
	c.schedule("c", time.Time{}) // disarmed
	if got, _ := c.queue.Get(); got != "a" {
		t.Fatalf("queued %q, want a", got)
	}
	c.queue.Done("a")
	done := make(chan struct{})
	go func() { c.stopTimers(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stopTimers did not return")
	}
	c.schedule("d", time.Now()) // after stop: ignored
	if n := len(c.timers); n != 0 {
		t.Errorf("%d timers left", n)
	}
}

func TestPoolViewAnnotations(t *testing.T) {
	tests := []struct {
		name         string
		annotations  map[string]interface{}
		status       map[string]interface{}
		wantMachines int64
		wantStep     time.Duration
	}{
		{"defaults", nil, nil, names.BaselinePoolMachines, 0},
		{"status machineCount", nil, map[string]interface{}{"machineCount": int64(5)}, 5, 0},
		{"annotations win", map[string]interface{}{MachinesAnnotation: "2", StepTimeAnnotation: "1500ms"},
			map[string]interface{}{"machineCount": int64(5)}, 2, 1500 * time.Millisecond},
		{"bad values are ignored", map[string]interface{}{MachinesAnnotation: "two", StepTimeAnnotation: "-1s"}, nil, names.BaselinePoolMachines, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "p"}}}
			if tt.annotations != nil {
				pool.Object["metadata"].(map[string]interface{})["annotations"] = tt.annotations
			}
			if tt.status != nil {
				pool.Object["status"] = tt.status
			}
			p := newPoolView(pool)
			if p.Machines != tt.wantMachines || p.StepTime != tt.wantStep {
				t.Errorf("machines %d step %v, want %d %v", p.Machines, p.StepTime, tt.wantMachines, tt.wantStep)
			}
		})
	}
}

func TestCountWalk(t *testing.T) {
	type step struct{ prev, next walk }
	for _, tc := range []struct {
		name  string
		steps []step
		want  Rollouts
	}{
		{"adopted on first sight", []step{{walk{}, walk{Target: "r0", Updated: 3}}}, Rollouts{}},
		{"one rollout, each node once", []step{
			{walk{Target: "r0", Updated: 3}, walk{Target: "r1"}},
			{walk{Target: "r1"}, walk{Target: "r1", Updated: 1}},
			{walk{Target: "r1", Updated: 1}, walk{Target: "r1", Updated: 2}},
			{walk{Target: "r1", Updated: 2}, walk{Target: "r1", Updated: 3}},
		}, Rollouts{Rollouts: 1, NodeUpdates: []int{1, 1, 1}}},
		{"targets replaced while paused update no node", []step{
			{walk{Target: "r0", Updated: 3}, walk{Target: "r1"}},
			{walk{Target: "r1"}, walk{Target: "r2"}},
			{walk{Target: "r2"}, walk{Target: "r2", Updated: 1}},
		}, Rollouts{Rollouts: 1, NodeUpdates: []int{1}}},
		{"a second rollout mid-walk", []step{
			{walk{Target: "r1"}, walk{Target: "r1", Updated: 1}},
			{walk{Target: "r1", Updated: 1}, walk{Target: "r2"}},
			{walk{Target: "r2"}, walk{Target: "r2", Updated: 1}},
		}, Rollouts{Rollouts: 2, NodeUpdates: []int{2}}},
		{"no step", []step{{walk{Target: "r1", Updated: 1}, walk{Target: "r1", Updated: 1}}}, Rollouts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r rolloutCounts
			for _, s := range tc.steps {
				r.countWalk("worker", s.prev, s.next, 3)
			}
			if got := r.get("worker"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
