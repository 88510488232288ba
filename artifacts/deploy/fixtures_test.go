package deploy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	maincluster "github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

// Resources the policy confines.
var (
	machineConfigs     = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	machineConfigPools = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
	kubeDeschedulers   = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "kubedeschedulers"}
	configMaps         = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func hyperConvergeds(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "hco.kubevirt.io", Version: version, Resource: "hyperconvergeds"}
}

// cluster is an in-memory profiles.Cluster holding the baseline objects:
// what the profiles read to compute their items.
type cluster struct {
	objects    map[string]*unstructured.Unstructured // Kind/namespace/name
	hcoVersion string
}

func (c *cluster) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	if o := c.objects[gvk.Kind+"/"+ns+"/"+name]; o != nil {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

func (c *cluster) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk == kubevirt.HyperConvergedGVK.GroupKind() {
		return c.hcoVersion, nil
	}
	return "v1", nil
}

func (c *cluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, o := range c.objects {
		if o.GetKind() == gvk.Kind {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

func (c *cluster) put(o *unstructured.Unstructured) {
	c.objects[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
}

// readObject reads the one object of a kind in a manifest file.
func readObject(t testing.TB, file, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, doc := range readManifests(t, file) {
		if doc["kind"] == kind {
			return &unstructured.Unstructured{Object: doc}
		}
	}
	t.Fatalf("%s has no %s", file, kind)
	return nil
}

// baselineHCO is the HyperConverged of the test environment in a
// version, as the API server serves it (CRD defaults applied).
func baselineHCO(version string) *unstructured.Unstructured {
	fields := map[string]interface{}{
		"higherWorkloadDensity": map[string]interface{}{"memoryOvercommitPercentage": int64(100)},
		"liveMigrationConfig": map[string]interface{}{"parallelMigrationsPerCluster": int64(5), "parallelOutboundMigrationsPerNode": int64(2),
			"completionTimeoutPerGiB": int64(150), "progressTimeout": int64(150), "allowAutoConverge": false, "allowPostCopy": false},
		"featureGates": map[string]interface{}{"enableCommonBootImageImport": true},
	}
	spec := fields
	if version == kubevirt.HCOVersionV1 {
		spec = map[string]interface{}{"virtualization": fields, "infra": map[string]interface{}{}}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "hco.kubevirt.io/" + version, "kind": "HyperConverged",
		"metadata": map[string]interface{}{"name": kubevirt.HCOName, "namespace": kubevirt.HCONamespace, "uid": "hco-uid",
			"resourceVersion": "10", "generation": int64(1), "creationTimestamp": "2026-01-01T00:00:00Z"},
		"spec": spec,
	}}
}

// newCluster is the test environment's baseline: the KubeDescheduler, the
// worker and master pools, a compact cluster's Scheduler, the
// descheduler CRD of an operator level and the HyperConverged.
func newCluster(t testing.TB, hcoVersion, deschedulerCRD string) *cluster {
	t.Helper()
	c := &cluster{objects: map[string]*unstructured.Unstructured{}, hcoVersion: hcoVersion}
	baseline := filepath.Join("..", "testdata", "baseline.yaml")
	c.put(readObject(t, baseline, "KubeDescheduler"))
	c.put(readObject(t, baseline, "MachineConfigPool"))
	c.put(readObject(t, deschedulerCRD, "CustomResourceDefinition"))
	c.put(&unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "config.openshift.io/v1", "kind": "Scheduler",
		"metadata": map[string]interface{}{"name": "cluster"}, "spec": map[string]interface{}{"mastersSchedulable": true}}})
	c.put(baselineHCO(hcoVersion))
	return c
}

// deschedulerCRDs are the descheduler operator levels the profile adapts to.
func deschedulerCRDs(t testing.TB) []string {
	t.Helper()
	levels, err := filepath.Glob(filepath.Join("..", "testdata", "descheduler-levels", "*.yaml"))
	if err != nil || len(levels) == 0 {
		t.Fatalf("no descheduler levels: %v", err)
	}
	return append(levels, filepath.Join("..", "crds", "kubedescheduler.yaml"))
}

// variant is one way a profile is configured: an example of its package
// (profiles.Metadata.Examples).
type variant struct {
	name    string
	profile profiles.Profile
	options v1alpha1.ProfileOptions
	objects []*unstructured.Unstructured
}

// variants are the examples of every profile of the catalogue.
func variants() []variant {
	var out []variant
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, ex := range p.Metadata().Examples {
			out = append(out, variant{ex.Name, p, ex.Options, ex.Objects})
		}
	}
	return out
}

func items(t testing.TB, v variant, c *cluster) []profiles.Item {
	t.Helper()
	for _, o := range v.objects {
		c.put(o)
	}
	opts := profiles.ResolveOptions(v.profile.Metadata().Options, v1alpha1.VirtPlatformConfigSpec{Profile: v.profile.Metadata().Name, Options: &v.options})
	its, err := v.profile.Items(context.Background(), profiles.Inputs{ConfigName: v.profile.Metadata().Name, Options: opts, Cluster: c})
	if err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
	for _, it := range its {
		if it.Err != nil {
			t.Fatalf("%s: item %s: %v", v.name, it.Name, it.Err)
		}
	}
	return its
}

// created is the object a server-side apply of desired creates: the
// desired state, labelled ours, with what the API server adds.
func created(desired *unstructured.Unstructured, config string) *unstructured.Unstructured {
	o := desired.DeepCopy()
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[profiles.ManagedByLabel] = config
	o.SetLabels(labels)
	meta := o.Object["metadata"].(map[string]interface{})
	meta["uid"], meta["creationTimestamp"], meta["generation"] = "new-uid", "2026-01-01T00:00:00Z", int64(1)
	meta["managedFields"] = managedFields()
	// A create carries the resourceVersion at which its target was read
	// as absent: its precondition (create-only), seen by admission.
	meta["resourceVersion"] = "4711"
	return o
}

// applied is old after a server-side apply of desired by our field
// manager: maps merged field by field, lists replaced (atomic), the
// write's bookkeeping updated.
func applied(old, desired *unstructured.Unstructured) *unstructured.Unstructured {
	o := old.DeepCopy()
	merge(o.Object, runtime.DeepCopyJSON(desired.Object))
	bump(o)
	return o
}

func merge(dst, src map[string]interface{}) {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// bump is the bookkeeping of a write: resourceVersion, generation and
// managedFields change.
func bump(o *unstructured.Unstructured) {
	o.SetResourceVersion(o.GetResourceVersion() + "1")
	o.SetGeneration(o.GetGeneration() + 1)
	o.Object["metadata"].(map[string]interface{})["managedFields"] = managedFields()
}

func managedFields() []interface{} {
	return []interface{}{map[string]interface{}{"manager": maincluster.FieldManager, "operation": "Apply", "apiVersion": "v1",
		"fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:spec": map[string]interface{}{}}}}
}

// withdrawn is old after an apply that no longer sets a field of ours.
func withdrawn(old *unstructured.Unstructured, path ...string) *unstructured.Unstructured {
	o := old.DeepCopy()
	unstructured.RemoveNestedField(o.Object, path...)
	bump(o)
	return o
}

// edited is o after an update that changes fields as someone with patch
// rights could.
func edited(o *unstructured.Unstructured, change func(map[string]interface{})) *unstructured.Unstructured {
	c := changed(o, change)
	bump(c)
	return c
}

// changed is a copy of o with fields changed (a created object, say).
func changed(o *unstructured.Unstructured, change func(map[string]interface{})) *unstructured.Unstructured {
	c := o.DeepCopy()
	change(c.Object)
	return c
}

func set(o map[string]interface{}, value interface{}, path ...string) {
	if err := unstructured.SetNestedField(o, runtime.DeepCopyJSONValue(value), path...); err != nil {
		panic(err)
	}
}

// gvrOf is the resource of a profile's target.
func gvrOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	gvk := o.GroupVersionKind()
	return schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
}

// desiredObjects are the objects every example of every profile writes,
// by item name; each example on a cluster of its own, so that the nodes
// of one are not the pool of another.
func desiredObjects(t testing.TB) map[string]*unstructured.Unstructured {
	t.Helper()
	desired := map[string]*unstructured.Unstructured{}
	for _, vr := range variants() {
		for _, it := range items(t, vr, newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])) {
			if !it.Absent {
				desired[it.Name] = it.Desired
			}
		}
	}
	return desired
}
