package plan

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Cluster reads and writes objects of the main cluster by kind, through a
// RESTMapper so that kinds installed after start are found.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.ResettableRESTMapper
}

// resource returns the client of the object's resource.
func (c *Cluster) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		return c.Dynamic.Resource(mapping.Resource), nil
	}
	return c.Dynamic.Resource(mapping.Resource).Namespace(namespace), nil
}

// Get returns the object, or nil when it or its kind does not exist.
func (c *Cluster) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ri, err := c.resource(gvk, namespace)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, objectName(namespace, name), err)
	}
	return obj, nil
}

// Served reports whether the cluster serves the kind; a miss refreshes
// discovery once, so CRDs installed after start are seen.
func (c *Cluster) Served(gvk schema.GroupVersionKind) (bool, error) {
	_, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		_, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ResetOnCRDChanges forgets the cached discovery whenever a CRD is created,
// changed or deleted, so prerequisites and mappings follow the cluster
// without a restart. It watches metadata only, to stay small.
func (c *Cluster) ResetOnCRDChanges(ctx context.Context, client metadata.Interface) error {
	factory := metadatainformer.NewSharedInformerFactory(client, 0)
	informer := factory.ForResource(crdGVR).Informer()
	reset := func(interface{}) { c.Mapper.Reset() }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    reset,
		UpdateFunc: func(_, obj interface{}) { reset(obj) },
		DeleteFunc: reset,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	return nil
}
