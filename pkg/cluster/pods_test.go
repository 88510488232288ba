package cluster

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

func podObject(name, node, phase string, labels map[string]interface{}, mem string, extra map[string]interface{}) unstructured.Unstructured {
	spec := map[string]interface{}{
		"nodeName":     node,
		"nodeSelector": map[string]interface{}{"cpu-model.node.kubevirt.io/Icelake-Server": "true"},
		"tolerations":  []interface{}{map[string]interface{}{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"containers": []interface{}{map[string]interface{}{"name": "compute", "image": "big-image", "env": []interface{}{map[string]interface{}{"name": "X", "value": "y"}},
			"resources": map[string]interface{}{"requests": map[string]interface{}{"memory": mem, "cpu": "1"}, "limits": map[string]interface{}{"memory": mem}}}},
		"initContainers": []interface{}{map[string]interface{}{"name": "init", "resources": map[string]interface{}{"requests": map[string]interface{}{"memory": "100Gi"}}}},
		"volumes":        []interface{}{map[string]interface{}{"name": "v", "emptyDir": map[string]interface{}{}}},
	}
	for k, v := range extra {
		spec[k] = v
	}
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{"name": name, "namespace": "default", "labels": labels, "annotations": map[string]interface{}{"big": "annotation"}},
		"spec":     spec, "status": map[string]interface{}{"phase": phase},
	}}
}

var launcherLabels = map[string]interface{}{LauncherLabel: LauncherLabelValue, LauncherVMILabel: "db-0", "other": "dropped"}

func TestSlimPod(t *testing.T) {
	u := podObject("virt-launcher-db-0-abc", "w1", "Running", launcherLabels, "8Gi", map[string]interface{}{"overhead": map[string]interface{}{"memory": "200Mi"}})
	o, err := slimPod(klog.Background(), &u)
	if err != nil {
		t.Fatal(err)
	}
	p := o.(*cachedPod)
	if p.node != "w1" || p.launcher == nil || p.launcher.VMI != "db-0" || p.launcher.Namespace != "default" {
		t.Fatalf("got %+v, want a launcher of default/db-0 on w1", p)
	}
	// The init container asks more memory than the containers: it decides.
	want := resource.MustParse("100Gi")
	want.Add(resource.MustParse("200Mi"))
	if got := p.requests[corev1.ResourceMemory]; got.Cmp(want) != 0 {
		t.Errorf("memory request = %s, want %s", got.String(), want.String())
	}
	spec := p.launcher.Pod.Spec
	if spec.NodeSelector["cpu-model.node.kubevirt.io/Icelake-Server"] != "true" || len(spec.Tolerations) != 1 || len(spec.Containers) != 1 ||
		len(spec.InitContainers) != 0 || spec.Containers[0].Image != "" || len(spec.Containers[0].Env) != 0 || len(spec.Volumes) != 0 {
		t.Errorf("launcher spec kept more or less than placement needs: %+v", spec)
	}
	if len(p.Labels) != 0 || len(p.Annotations) != 0 {
		t.Errorf("kept labels %v annotations %v", p.Labels, p.Annotations)
	}
	// What a plan derives from the launcher is derived once.
	calls := 0
	derive := func(*corev1.Pod) any { calls++; return calls }
	if first, again := p.launcher.Derived(derive), p.launcher.Derived(derive); first != 1 || again != 1 || calls != 1 {
		t.Errorf("derived %v then %v in %d calls, want 1 once", first, again, calls)
	}
}

func TestSlimPodEndedOrUnbound(t *testing.T) {
	for _, tc := range []struct{ node, phase string }{{"w1", "Succeeded"}, {"w1", "Failed"}, {"", "Pending"}} {
		u := podObject("p", tc.node, tc.phase, launcherLabels, "8Gi", nil)
		o, _ := slimPod(klog.Background(), &u)
		if p := o.(*cachedPod); p.node != "" || p.launcher != nil || len(p.requests) != 0 {
			t.Errorf("%s on %q: kept %+v, want nothing asked of a node", tc.phase, tc.node, p)
		}
	}
}

func TestPodTotalsIncremental(t *testing.T) {
	totals := podTotals{requested: map[string]corev1.ResourceList{}}
	slim := func(u unstructured.Unstructured) *cachedPod {
		o, _ := slimPod(klog.Background(), &u)
		return o.(*cachedPod)
	}
	a := slim(podObject("a", "w1", "Running", nil, "200Gi", nil))
	b := slim(podObject("b", "w1", "Running", launcherLabels, "300Gi", nil))
	totals.change(a, 1)
	shared := totals.snapshot()["w1"]
	totals.change(b, 1)
	if got := totals.requested["w1"][corev1.ResourceMemory]; got.Cmp(resource.MustParse("500Gi")) != 0 {
		t.Errorf("w1 memory = %s, want 500Gi", got.String())
	}
	if got := shared[corev1.ResourceMemory]; got.Cmp(resource.MustParse("200Gi")) != 0 {
		t.Errorf("a snapshot taken before changed to %s: lists must be replaced, not modified", got.String())
	}
	// Updated: moved to w2 (a new pod object, as the informer delivers).
	moved := slim(podObject("b", "w2", "Running", launcherLabels, "300Gi", nil))
	totals.change(b, -1)
	totals.change(moved, 1)
	totals.change(a, -1)
	if _, ok := totals.requested["w1"]; ok {
		t.Errorf("w1 still has requests %v after its pods left", totals.requested["w1"])
	}
	if got := totals.requested["w2"][corev1.ResourceMemory]; got.Cmp(resource.MustParse("300Gi")) != 0 {
		t.Errorf("w2 memory = %s, want 300Gi", got.String())
	}
}

func TestReadPodRequests(t *testing.T) {
	items := []unstructured.Unstructured{
		podObject("virt-launcher-db-0-src", "w1", "Running", launcherLabels, "8Gi", nil),
		podObject("virt-launcher-db-0-dst", "w2", "Pending", launcherLabels, "8Gi", nil),
		podObject("other", "w1", "Running", nil, "1Gi", nil),
	}
	got := ReadPodRequests(context.Background(), items)
	if src, dst := got.Launchers.OnNode("w1"), got.Launchers.OnNode("w2"); len(src) != 1 || len(dst) != 1 || src[0].VMI != "db-0" || dst[0].VMI != "db-0" {
		t.Errorf("launchers on w1 %+v and w2 %+v, want db-0's source on w1 and its target on w2", src, dst)
	}
	if n := len(got.Requested); n != 2 {
		t.Errorf("requests on %d nodes, want 2", n)
	}
}

// TestPodCacheLaunchersFollowEvents: the cache's launchers change pod by
// pod, stay in name order on their node, and what a reader already holds
// stays as it read it.
func TestPodCacheLaunchersFollowEvents(t *testing.T) {
	c := NewPodCache(nil)
	slim := func(name, vmi, node string) *cachedPod {
		labels := map[string]interface{}{LauncherLabel: LauncherLabelValue, LauncherVMILabel: vmi}
		u := podObject(name, node, "Running", labels, "8Gi", nil)
		o, _ := slimPod(klog.Background(), &u)
		return o.(*cachedPod)
	}
	vmis := func(ls []Launcher) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.VMI)
		}
		return out
	}
	src := slim("virt-launcher-db-0-src", "db-0", "w1")
	web := slim("virt-launcher-web-abc", "web", "w1")
	c.change(web, 1)
	c.change(src, 1)
	c.change(slim("virt-launcher-app-abc", "app", "w1"), 1)
	held := c.launchers.OnNode("w1")
	if got := vmis(held); !reflect.DeepEqual(got, []string{"app", "db-0", "web"}) {
		t.Errorf("launchers on w1: %v, want app, db-0, web", got)
	}
	before := c.launchers.Generation()
	dst := slim("virt-launcher-db-0-dst", "db-0", "w2")
	c.change(dst, 1)
	c.change(src, -1) // the migration ended: the source pod is gone
	if after := c.launchers.Generation(); after != before+2 {
		t.Errorf("generation %d after an add and a removal from %d, want %d", after, before, before+2)
	}
	if got, moved := vmis(c.launchers.OnNode("w1")), vmis(c.launchers.OnNode("w2")); !reflect.DeepEqual(got, []string{"app", "web"}) || !reflect.DeepEqual(moved, []string{"db-0"}) {
		t.Errorf("after the migration: w1 %v and w2 %v, want [app web] and [db-0]", got, moved)
	}
	if got := vmis(held); !reflect.DeepEqual(got, []string{"app", "db-0", "web"}) {
		t.Errorf("a reader's launchers changed under it to %v", got)
	}
	c.change(dst, -1)
	if got := c.launchers.OnNode("w2"); got != nil || len(c.launchers.byNode) != 1 {
		t.Errorf("after w2's pods left: %v (%d nodes kept)", got, len(c.launchers.byNode))
	}
}

// TestPodChanged: what a status update leaves as it was is no change of
// the pod cache; a change of node, requests or placement is.
func TestPodChanged(t *testing.T) {
	pod := func(node string, mem string, selector map[string]string) *cachedPod {
		req := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
		return &cachedPod{node: node, requests: req, launcher: &Launcher{Namespace: "default", VMI: "vm-0", Node: node, Pod: &corev1.Pod{Spec: corev1.PodSpec{
			NodeSelector: selector, Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{Requests: req}}}}}}}
	}
	base := pod("n1", "1Gi", nil)
	other := &cachedPod{node: "n1", requests: base.requests}
	for _, tt := range []struct {
		name    string
		a, b    *cachedPod
		changed bool
	}{
		{"the same, read again", base, pod("n1", "1024Mi", nil), false},
		{"another node", base, pod("n2", "1Gi", nil), true},
		{"other requests", base, pod("n1", "2Gi", nil), true},
		{"another selector", base, pod("n1", "1Gi", map[string]string{"gpu": "true"}), true},
		{"no longer a launcher", base, other, true},
		{"added or gone", nil, base, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := podChanged(tt.a, tt.b); got != tt.changed {
				t.Errorf("podChanged = %v, want %v", got, tt.changed)
			}
		})
	}
}

// TestLauncherPlacementsShared: launchers that ask the same and may run on
// the same nodes share one cut-down pod (and its requests); one that asks
// otherwise has its own; a placement no pod uses any more is forgotten.
func TestLauncherPlacementsShared(t *testing.T) {
	// Overheads no other test uses: placements of their own.
	slim := func(name, node, overhead string) *cachedPod {
		u := podObject(name, node, "Running", map[string]interface{}{LauncherLabel: LauncherLabelValue, LauncherVMILabel: name}, "8Gi",
			map[string]interface{}{"overhead": map[string]interface{}{"memory": overhead}})
		o, err := slimPod(klog.Background(), &u)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*cachedPod)
	}
	a, b, big := slim("a", "w1", "123Mi"), slim("b", "w2", "123Mi"), slim("c", "w1", "456Mi")
	if a.launcher.Pod != b.launcher.Pod || reflect.ValueOf(a.requests).UnsafePointer() != reflect.ValueOf(b.requests).UnsafePointer() {
		t.Errorf("two launchers of one template do not share their pod and requests")
	}
	if big.launcher.Pod == a.launcher.Pod {
		t.Errorf("a launcher asking more shares the pod of one asking less")
	}
	if got := big.requests[corev1.ResourceMemory]; got.Cmp(resource.MustParse("102856Mi")) != 0 {
		t.Errorf("requests %v, want the init container's 100Gi and 456Mi of overhead", big.requests)
	}
	small, _ := placementKey(a.launcher.Pod)
	large, _ := placementKey(big.launcher.Pod)
	if !launcherPlacements.kept(small) || !launcherPlacements.kept(large) {
		t.Fatalf("the placements in use are not kept")
	}
	a, b, big = nil, nil, nil
	deadline := time.Now().Add(5 * time.Second)
	for (launcherPlacements.kept(small) || launcherPlacements.kept(large)) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if launcherPlacements.kept(small) || launcherPlacements.kept(large) {
		t.Errorf("placements still kept after their pods were dropped")
	}
}

// TestPodCacheForgetsALauncherDeletedAfterAStatusUpdate: a status update
// is not applied to the index, so the informer deletes a copy of the pod
// whose launcher the index never held; the launcher the index holds for
// that pod goes all the same (it stayed there before, and the capacity
// check counted a VM's launcher that no longer existed).
func TestPodCacheForgetsALauncherDeletedAfterAStatusUpdate(t *testing.T) {
	c := NewPodCache(nil)
	slim := func(name, vmi, node, phase, rv string) *cachedPod {
		labels := map[string]interface{}{LauncherLabel: LauncherLabelValue, LauncherVMILabel: vmi}
		u := podObject(name, node, phase, labels, "8Gi", nil)
		u.SetResourceVersion(rv)
		o, _ := slimPod(klog.Background(), &u)
		return o.(*cachedPod)
	}
	for _, tc := range []struct {
		name   string
		events func()
		want   []string
	}{
		{"status update, then deleted", func() {
			created := slim("virt-launcher-db-0", "db-0", "w1", "Pending", "1")
			running := slim("virt-launcher-db-0", "db-0", "w1", "Running", "2")
			c.added(created)
			c.updated(created, running)
			c.deleted(running)
		}, nil},
		{"another VM's launcher on the node stays", func() {
			c.added(slim("virt-launcher-web", "web", "w1", "Running", "3"))
			created := slim("virt-launcher-db-1", "db-1", "w1", "Pending", "4")
			running := slim("virt-launcher-db-1", "db-1", "w1", "Running", "5")
			c.added(created)
			c.updated(created, running)
			c.deleted(running)
		}, []string{"web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.events()
			var got []string
			for _, l := range c.launchers.OnNode("w1") {
				got = append(got, l.VMI)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("launchers on w1: %v, want %v", got, tc.want)
			}
		})
	}
	if n := c.totals.snapshot()["w1"]; n.Memory().String() != "100Gi" {
		t.Errorf("memory requested on w1: %v, want 100Gi (the web launcher's: its init container asks the most)", n.Memory())
	}
}
