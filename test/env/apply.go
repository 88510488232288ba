package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	// fieldManager owns what the environment applies.
	fieldManager = "virt-advisor-testenv"
	// mcoFieldManager is the MachineConfig operator's manager; the seeded
	// pool status is written as it so the fake MCO (same manager) can take
	// over the fields without conflicts.
	mcoFieldManager = names.MCOFieldManager

	crdEstablishTimeout = 30 * time.Second
)

var (
	crdGVR  = names.CRDs
	poolGVR = names.MachineConfigPools
)

// applier applies unstructured manifests with server-side apply, mapping
// kinds to resources through discovery (refreshed when CRDs appear).
type applier struct {
	dyn    dynamic.Interface
	disc   discovery.DiscoveryInterface // uncached
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(cfg *rest.Config) (*applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &applier{dyn: dyn, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// manifestFiles lists the YAML/JSON files of dir in name order (the
// numbered deploy manifests depend on it).
func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifests in %s", dir)
	}
	return files, nil
}

// readManifests decodes every document of files; empty documents (comments
// only) are skipped.
func readManifests(files ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		got, err := decodeManifests(file, f)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// decodeManifests decodes every document of a YAML or JSON stream (from
// source, for errors); empty documents (comments only) are skipped.
func decodeManifests(source string, r io.Reader) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", source, i+1)
		}
		objs = append(objs, u)
	}
}

// resource maps obj to its dynamic client. A kind the cached discovery does
// not know yet (a CRD just established) triggers a refresh for a few seconds.
func (a *applier) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	err := poll(ctx, "API "+gvk.String()+" served", 250*time.Millisecond, 10*time.Second, nil, func(context.Context) (bool, error) {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			a.mapper.Reset()
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return a.dyn.Resource(mapping.Resource).Namespace(ns), nil
}

// apply server-side applies obj, taking over conflicting fields: the
// environment is the source of truth for what it installs.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return fmt.Errorf("applying %s: %w", describe(obj), err)
	}
	if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying %s: %w", describe(obj), err)
	}
	return nil
}

// applyIfAbsent applies obj only when it does not exist yet, so a reused
// data dir keeps whatever state earlier runs (and the user) left behind.
func (a *applier) applyIfAbsent(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return false, fmt.Errorf("applying %s: %w", describe(obj), err)
	}
	_, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading %s: %w", describe(obj), err)
	}
	return true, a.apply(ctx, obj)
}

// waitEstablished waits until every CRD among objs is Established, then
// drops the cached discovery so the new kinds can be mapped.
func (a *applier) waitEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := obj.GetName()
		err := poll(ctx, "CRD "+name+" Established", 100*time.Millisecond, crdEstablishTimeout, nil, func(ctx context.Context) (bool, error) {
			crd, err := a.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if fakemco.ConditionStatus(crd, "Established") == "True" {
				return true, nil
			}
			return false, fmt.Errorf("conditions: %s", conditionsSummary(crd))
		})
		if err != nil {
			return err
		}
	}
	a.mapper.Reset()
	return nil
}

// seedPoolStatus writes a MachineConfigPool status as the MCO reports a
// pool whose machines all run spec.configuration: 3 machines, updated and
// ready. status.conditions is an atomic list, so it is written whole.
func (a *applier) seedPoolStatus(ctx context.Context, name string, machines int64) error {
	pool, err := a.dyn.Resource(poolGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	rendered, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	cond := func(typ, status, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "lastTransitionTime": now, "reason": "", "message": message}
	}
	status := map[string]any{
		"observedGeneration":      pool.GetGeneration(),
		"machineCount":            machines,
		"updatedMachineCount":     machines,
		"readyMachineCount":       machines,
		"unavailableMachineCount": int64(0),
		"degradedMachineCount":    int64(0),
		"conditions": []any{
			cond("Updated", "True", "All nodes are updated with MachineConfig "+rendered),
			cond("Updating", "False", ""),
			cond("Degraded", "False", ""),
			cond("NodeDegraded", "False", ""),
			cond("RenderDegraded", "False", ""),
		},
	}
	if cfg, ok, _ := unstructured.NestedMap(pool.Object, "spec", "configuration"); ok {
		status["configuration"] = cfg
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": pool.GetAPIVersion(),
		"kind":       pool.GetKind(),
		"metadata":   map[string]any{"name": name},
		"status":     status,
	}}
	if _, err := a.dyn.Resource(poolGVR).ApplyStatus(ctx, name, obj, metav1.ApplyOptions{FieldManager: mcoFieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing MachineConfigPool %s status: %w", name, err)
	}
	return nil
}

// hasStatus reports whether the pool already has a status (seeded by an
// earlier run or driven by the fake MCO since).
func (a *applier) poolHasStatus(ctx context.Context, name string) (bool, error) {
	pool, err := a.dyn.Resource(poolGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
	}
	_, ok, _ := unstructured.NestedFieldNoCopy(pool.Object, "status", "machineCount")
	return ok, nil
}

// conditionsSummary renders status.conditions for error messages.
func conditionsSummary(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if len(conds) == 0 {
		return "(no conditions)"
	}
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		m, _ := c.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// describe names an object in messages: "MachineConfigPool worker".
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

// relocate moves the manifests from namespace from to to, as an
// administrator installing elsewhere does (kustomize's namespace, or by
// hand): the Namespace itself, the objects in it, the ServiceAccount
// subjects of bindings and the Service of an APIService. Other namespaces
// (default, openshift-cnv) and cluster-scoped objects stay as they are.
func relocate(objs []*unstructured.Unstructured, from, to string) {
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "Namespace" && obj.GetName() == from:
			obj.SetName(to)
		case obj.GetNamespace() == from:
			obj.SetNamespace(to)
		}
		if subjects, ok, _ := unstructured.NestedSlice(obj.Object, "subjects"); ok {
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == from {
					m["namespace"] = to
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
		}
		if ns, ok, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace"); ok && obj.GetKind() == "APIService" && ns == from {
			_ = unstructured.SetNestedField(obj.Object, to, "spec", "service", "namespace")
		}
		if obj.GetKind() == "FlowSchema" {
			relocateFlowSchema(obj, from, to)
		}
	}
}

// relocateFlowSchema moves a FlowSchema's ServiceAccount subjects and the
// namespaces of its resource rules.
func relocateFlowSchema(obj *unstructured.Unstructured, from, to string) {
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	for _, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			continue
		}
		subjects, _ := rule["subjects"].([]any)
		for _, s := range subjects {
			if sa, ok := s.(map[string]any)["serviceAccount"].(map[string]any); ok && sa["namespace"] == from {
				sa["namespace"] = to
			}
		}
		resourceRules, _ := rule["resourceRules"].([]any)
		for _, rr := range resourceRules {
			m, ok := rr.(map[string]any)
			if !ok {
				continue
			}
			namespaces, _ := m["namespaces"].([]any)
			for i, ns := range namespaces {
				if ns == from {
					namespaces[i] = to
				}
			}
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, rules, "spec", "rules")
}
