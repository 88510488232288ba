package plan

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
)

// Drift is decided from the watch cache of the target, without a
// request, only where the cache can tell.
func TestDriftFromCaches(t *testing.T) {
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	applied := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"advisor.kubevirt.io/managed-by":"example"},"name":"example-config","namespace":"openshift-cnv"},"data":{"example-key":"example-value"}}`
	item := func(desired string) v1alpha1.VirtPlatformConfigItem {
		return v1alpha1.VirtPlatformConfigItem{Name: "configure-example-component", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStateCompleted,
			TargetRef:    v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "openshift-cnv", Name: "example-config"},
			DesiredState: &k8sruntime.RawExtension{Raw: []byte(desired)}, ManagedFields: []string{"data"}}
	}
	live := func(labels map[string]interface{}, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "example-config", "namespace": "openshift-cnv", "labels": labels, "resourceVersion": "5"},
			"data":     map[string]interface{}{"example-key": value, "other": "theirs"}}}
	}
	ours := map[string]interface{}{profiles.ManagedByLabel: "example"}

	for _, tt := range []struct {
		name    string
		live    *unstructured.Unstructured // nil: absent
		watched bool
		desired string
		drifted map[string][]string
		decided bool
	}{
		{"as applied (others' fields aside): in sync", live(ours, "example-value"), true, applied, map[string][]string{}, true},
		{"a managed field edited: drifted", live(ours, "by-hand"), true, applied, map[string][]string{"configure-example-component": {"data"}}, true},
		{"deleted: drifted", nil, true, applied, map[string][]string{"configure-example-component": {"the object (deleted)"}}, true},
		{"our label removed, outside the managed fields: a plan must tell", live(nil, "example-value"), true, applied, nil, false},
		{"the desired state changed since it was applied: a plan must tell (input change)", live(ours, "example-value"), true,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"advisor.kubevirt.io/managed-by":"example"},"name":"example-config","namespace":"openshift-cnv"},"data":{"example-key":"older"}}`, nil, false},
		{"the target not watched: a plan must tell", live(ours, "by-hand"), false, applied, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var objs []k8sruntime.Object
			if tt.live != nil {
				objs = append(objs, tt.live)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, objs...)
			mapper := clustertest.Namespaced(cmGVK)
			c := &cluster.Cluster{Dynamic: dyn, Mapper: mapper, Watches: cluster.NewWatches(dyn, mapper)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.Watches.Start(ctx)
			if tt.watched {
				key := cluster.ObjectKey{GVK: cmGVK, Namespace: "openshift-cnv", Name: "example-config"}
				watchSynced(ctx, t, c, "example", key)
			}
			e := &Engine{Cluster: c, Profiles: oneProfile{example.New()}}
			cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "example"}, Spec: v1alpha1.VirtPlatformConfigSpec{Profile: "example-profile"}}
			drifted, decided, err := e.DriftFromCaches(ctx, cfg, []v1alpha1.VirtPlatformConfigItem{item(tt.desired)})
			if err != nil {
				t.Fatal(err)
			}
			if decided != tt.decided || (decided && !reflect.DeepEqual(drifted, tt.drifted)) {
				t.Errorf("drifted %v decided %v, want %v %v", drifted, decided, tt.drifted, tt.decided)
			}
		})
	}
}

// TestDriftFromCachesReadsTargetInputsFromTheirCache: a target that is
// also an input of its profile (the KubeDescheduler whose other profiles
// load-aware-rebalancing keeps) is read from its watch cache, as the
// target it is compared with: the drift check sends no request at all.
func TestDriftFromCachesReadsTargetInputsFromTheirCache(t *testing.T) {
	key := cluster.ObjectKey{GVK: configMapGVK, Namespace: "ns", Name: "target"}
	live := configMap("target", map[string]interface{}{"k": "by-hand"}, "5", "uid-1")
	desired := configMap("target", map[string]interface{}{"k": "ours"}, "", "")
	ctx, c, dyn := configMapsWatched(t, "fake", key, live)
	profile := &fakeProfile{
		inputs: []profiles.ObjectRef{{GVK: configMapGVK, Namespace: "ns", Name: "target", Target: true}},
		items:  []profiles.Item{{Name: "item", Desired: desired}},
	}
	e := &Engine{Cluster: c, Profiles: oneProfile{profile}}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "fake"}, Spec: v1alpha1.VirtPlatformConfigSpec{Profile: "fake"}}
	applied := v1alpha1.VirtPlatformConfigItem{Name: "item", Operation: v1alpha1.OperationUpdate, State: v1alpha1.ItemStateCompleted,
		TargetRef:     v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "target"},
		DesiredState:  &k8sruntime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","namespace":"ns"},"data":{"k":"ours"}}`)},
		ManagedFields: []string{"data"}}
	dyn.ClearActions()
	drifted, decided, err := e.DriftFromCaches(ctx, cfg, []v1alpha1.VirtPlatformConfigItem{applied})
	if err != nil {
		t.Fatal(err)
	}
	if !decided || !reflect.DeepEqual(drifted, map[string][]string{"item": {"data"}}) {
		t.Errorf("drifted %v decided %v, want item's data drifted", drifted, decided)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "watch" && a.GetVerb() != "list" {
			t.Errorf("the drift check sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// configMapsWatched is a cluster of the ConfigMaps objs whose watch of key
// (for owner) has synced; the watches stop with the test.
func configMapsWatched(t *testing.T, owner string, key cluster.ObjectKey, objs ...k8sruntime.Object) (context.Context, *cluster.Cluster, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, objs...)
	mapper := clustertest.Namespaced(configMapGVK)
	c := &cluster.Cluster{Dynamic: dyn, Mapper: mapper, Watches: cluster.NewWatches(dyn, mapper)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.Watches.Start(ctx)
	watchSynced(ctx, t, c, owner, key)
	return ctx, c, dyn
}

// watchSynced watches key for owner and waits until its cache holds it.
func watchSynced(ctx context.Context, t *testing.T, c *cluster.Cluster, owner string, key cluster.ObjectKey) {
	t.Helper()
	c.Watches.Set(owner, []cluster.ObjectKey{key})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := c.Watches.Cached(key)
		return ok, nil
	}); err != nil {
		t.Fatalf("the watch did not sync: %v", err)
	}
}
