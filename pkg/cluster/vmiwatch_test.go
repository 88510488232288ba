package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

var vmiGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}

// vmiServer answers a list of listed and, to a watch, writes events and
// then holds the stream open until the client goes.
type vmiServer struct {
	listed []unstructured.Unstructured
	events []string
	mu     sync.Mutex
	// queries are the query strings of the requests, in order.
	queries []string
}

func (s *vmiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/apis/kubevirt.io/v1/virtualmachineinstances" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.queries = append(s.queries, r.URL.RawQuery)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") != "true" {
		var items []interface{}
		for i := range s.listed {
			items = append(items, s.listed[i].Object)
		}
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"kind": "VirtualMachineInstanceList",
			"metadata": map[string]interface{}{"resourceVersion": "10"}, "items": items})
		return
	}
	for _, ev := range s.events {
		fmt.Fprintln(w, ev)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func (s *vmiServer) start(t *testing.T) *vmiListWatch {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	raw, err := NewRawClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &vmiListWatch{raw: raw, gvr: vmiGVR}
}

// withReady is a VMI of clustertest.VMI with a Ready condition too.
func withReady(name, node, status string) unstructured.Unstructured {
	u := clustertest.VMI(name, node, "LiveMigrate", "True", "")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	_ = unstructured.SetNestedSlice(u.Object, append(conds, map[string]interface{}{"type": "Ready", "status": status}), "status", "conditions")
	return u
}

// eventJSON is an event as kube-apiserver writes it, its type first.
func eventJSON(t *testing.T, typ watch.EventType, obj map[string]interface{}) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"type":%q,"object":%s}`, typ, b)
}

// The list reads each VMI as kubevirt.ReadVMI reads the whole object, with
// its resourceVersion, and passes the informer's options on.
func TestVMIListWatchLists(t *testing.T) {
	listed := []unstructured.Unstructured{
		withReady("ready", "worker-1", "True"),
		withReady("not-ready", "worker-2", "False"),
		clustertest.VMI("gpu-0", "worker-2", "LiveMigrate", "False", "HostDeviceNotLiveMigratable"),
	}
	for i := range listed {
		listed[i].SetResourceVersion(fmt.Sprint(7 + i))
	}
	s := &vmiServer{listed: listed}
	lw := s.start(t)
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*CachedVMIList)
	if list.ResourceVersion != "10" || len(list.Items) != len(listed) {
		t.Fatalf("list at %q of %d VMIs, want at 10 of %d", list.ResourceVersion, len(list.Items), len(listed))
	}
	for i, got := range list.Items {
		if want := kubevirt.ReadVMI(&listed[i]); got.VMI != want || got.ResourceVersion != listed[i].GetResourceVersion() {
			t.Errorf("VMI %d: %+v at %q, want %+v at %q", i, got.VMI, got.ResourceVersion, want, listed[i].GetResourceVersion())
		}
	}
	if q := s.queries[0]; !strings.Contains(q, "limit=500") || !strings.Contains(q, "resourceVersion=0") {
		t.Errorf("list query %q does not carry the informer's options", q)
	}
}

// The watch hands on each event with the VMI read as a whole object is,
// a bookmark's resourceVersion, and an error as the Status it is.
func TestVMIListWatchWatches(t *testing.T) {
	moved := withReady("a", "worker-2", "True")
	moved.SetResourceVersion("12")
	added := withReady("a", "worker-1", "False")
	added.SetResourceVersion("11")
	s := &vmiServer{events: []string{
		eventJSON(t, watch.Added, added.Object),
		// The object before its type, and a field after them: read all
		// the same.
		`{"object":` + strings.TrimSuffix(strings.TrimPrefix(eventJSON(t, watch.Error, moved.Object), `{"type":"ERROR","object":`), "}") +
			`,"type":"MODIFIED","more":{"a":[1]}}`,
		eventJSON(t, watch.Bookmark, map[string]interface{}{"kind": "VirtualMachineInstance", "apiVersion": "kubevirt.io/v1",
			"metadata": map[string]interface{}{"resourceVersion": "13", "annotations": map[string]interface{}{"k8s.io/initial-events-end": "true"}}}),
		strings.TrimSuffix(eventJSON(t, watch.Deleted, moved.Object), "}") + `,"more":"x"}`,
		eventJSON(t, watch.Error, map[string]interface{}{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"message": "too old resource version: 1 (13)", "reason": "Expired", "code": 410}),
	}}
	lw := s.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []struct {
		typ watch.EventType
		vmi kubevirt.VMI
		rv  string
	}{
		{watch.Added, kubevirt.ReadVMI(&added), "11"},
		{watch.Modified, kubevirt.ReadVMI(&moved), "12"},
		{watch.Bookmark, kubevirt.VMI{}, "13"},
		{watch.Deleted, kubevirt.ReadVMI(&moved), "12"},
	}
	for i, ev := range want {
		got := <-w.ResultChan()
		c, ok := got.Object.(*CachedVMI)
		if got.Type != ev.typ || !ok || c.VMI != ev.vmi || c.ResourceVersion != ev.rv {
			t.Fatalf("event %d: %s %#v, want %s of %+v at %s", i, got.Type, got.Object, ev.typ, ev.vmi, ev.rv)
		}
	}
	got := <-w.ResultChan()
	if st, ok := got.Object.(*metav1.Status); got.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("last event %s %#v, want the Error 410 Expired", got.Type, got.Object)
	}
	if q := s.queries[0]; !strings.Contains(q, "watch=true") || !strings.Contains(q, "resourceVersion=10") || !strings.Contains(q, "allowWatchBookmarks=true") {
		t.Errorf("watch query %q does not carry the informer's options", q)
	}
}

// A stream that is not JSON watch events ends the watch with an error,
// not with events made up of it.
func TestVMIListWatchRefusesGarbage(t *testing.T) {
	for name, stream := range map[string]string{
		"not an object":     `["ADDED"]`,
		"no object":         `{"type":"ADDED"}`,
		"a string as a VMI": `{"type":"ADDED","object":"vm"}`,
	} {
		t.Run(name, func(t *testing.T) {
			lw := (&vmiServer{events: []string{stream}}).start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := <-w.ResultChan(); got.Type != watch.Error {
				t.Errorf("event %s %#v, want an Error", got.Type, got.Object)
			}
		})
	}
}

// An informer on the list and watch holds what they say: the list's VMIs,
// then the watch's changes.
func TestVMIListWatchFeedsAnInformer(t *testing.T) {
	kept := clustertest.VMI("kept", "worker-1", "None", "True", "")
	kept.SetResourceVersion("5")
	gone := clustertest.VMI("gone", "worker-1", "LiveMigrate", "True", "")
	gone.SetResourceVersion("6")
	added := withReady("added", "worker-3", "True")
	added.SetResourceVersion("11")
	s := &vmiServer{listed: []unstructured.Unstructured{kept, gone},
		events: []string{eventJSON(t, watch.Added, added.Object), eventJSON(t, watch.Deleted, gone.Object)}}
	informer := cache.NewSharedIndexInformer(s.start(t), &CachedVMI{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.RunWithContext(ctx)
	want := map[string]kubevirt.VMI{"default/kept": kubevirt.ReadVMI(&kept), "default/added": kubevirt.ReadVMI(&added)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]kubevirt.VMI{}
		for _, o := range informer.GetStore().List() {
			v := o.(*CachedVMI).VMI
			got[v.Namespace+"/"+v.Name] = v
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer holds %+v, want %+v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rv := informer.LastSyncResourceVersion(); rv != "11" && rv != "6" {
		t.Errorf("informer at resourceVersion %q, want that of the last event", rv)
	}
}
