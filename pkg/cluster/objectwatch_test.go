package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// An edit made while the watch of a target is broken (a kube-apiserver
// restart: connection refused, then 403 until its authorizer has synced)
// reaches the owners within seconds of the API answering again, and
// meanwhile the stale copy is not served as current. A shared informer's
// default backoff (up to 30 s, doubled by jitter) missed such an edit for
// longer than drift detection may take, and its cache stayed "synced".
func TestAnEditDuringABrokenWatchIsSeenSoonAfterTheAPIAnswers(t *testing.T) {
	kd := profiles.KubeDeschedulerGVK
	gvr := schema.GroupVersionResource{Group: kd.Group, Version: kd.Version, Resource: "kubedeschedulers"}
	object := func(rv string, interval int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": kd.GroupVersion().String(), "kind": kd.Kind,
			"metadata": map[string]interface{}{"name": "cluster", "namespace": "openshift-kube-descheduler-operator", "resourceVersion": rv},
			"spec":     map[string]interface{}{"deschedulingIntervalSeconds": interval},
		}}
		return u
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "KubeDeschedulerList"}, object("1", 60))

	// The API server: refuses (403) the next `failing` list or watch calls.
	var mu sync.Mutex
	failing := 0
	var current *watch.FakeWatcher
	forbidden := apierrors.NewForbidden(gvr.GroupResource(), "cluster", nil)
	dyn.PrependWatchReactor("kubedeschedulers", func(clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing > 0 {
			failing--
			return true, nil, forbidden
		}
		current = watch.NewFakeWithChanSize(1, false)
		return true, current, nil
	})
	dyn.PrependReactor("list", "kubedeschedulers", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing > 0 {
			failing--
			return true, nil, forbidden
		}
		return false, nil, nil
	})

	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{kd.GroupVersion()})
	mapper.Add(kd, meta.RESTScopeNamespace)
	w := NewWatches(dyn, mapper)
	events := make(chan ObjectKey, 16)
	w.OnEvent(func(owner string, key ObjectKey) { events <- key })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.Start(ctx)
	key := ObjectKey{GVK: kd, Namespace: "openshift-kube-descheduler-operator", Name: "cluster"}
	w.Set("config", []ObjectKey{key})

	select {
	case <-events:
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the object's first list")
	}
	waitFor(t, 10*time.Second, "the watch to start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := w.Cached(key)
		return ok && current != nil
	})

	// The API server goes away: the watch ends, the next four calls are
	// refused, and someone edits the object meanwhile.
	if err := dyn.Tracker().Update(gvr, object("2", 1800), key.Namespace); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failing = 4
	current.Stop()
	mu.Unlock()
	broke := time.Now()

	// Until a list repairs it, the old copy is not served as current.
	waitFor(t, time.Second, "Cached to stop serving the copy of the broken watch", func() bool {
		_, ok := w.Cached(key)
		return !ok
	})

	select {
	case <-events:
		if took := time.Since(broke); took > 6*time.Second {
			t.Errorf("the edit was seen %v after the watch broke, want within 6s", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the edit made while the watch was broken was not reported within 20s")
	}
	got, ok := w.Cached(key)
	if !ok || got.GetResourceVersion() != "2" {
		t.Errorf("Cached = %v, %v after the relist, want resourceVersion 2", got, ok)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
