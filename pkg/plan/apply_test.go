package plan

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/transient"
)

// An approved write refused by the main API server keeps the server's
// words and its status: a 500 (a webhook that timed out while
// kube-apiserver shut down, an etcd leader change) or a 429 is retried,
// a 422 or an admission denial is not.
func TestApplyErrorKeepsTheAPIStatus(t *testing.T) {
	gr := schema.GroupResource{Group: "hco.kubevirt.io", Resource: "hyperconvergeds"}
	webhook := errors.New(`failed calling webhook "hold.example.io": failed to call webhook: Post "https://127.0.0.1:1/validate?timeout=2s": context deadline exceeded`)
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"500 webhook timeout", apierrors.NewInternalError(webhook), true},
		{"429", apierrors.NewTooManyRequests("the server is busy", 1), true},
		{"503", apierrors.NewServiceUnavailable("the server is shutting down"), true},
		{"409 conflict", apierrors.NewConflict(gr, "kubevirt-hyperconverged", errors.New("the object has been modified")), true},
		{"403 admission denial", apierrors.NewForbidden(gr, "kubevirt-hyperconverged", errors.New("denied by policy")), false},
		{"422 invalid", apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "HyperConverged"}, "kubevirt-hyperconverged",
			field.ErrorList{field.Invalid(field.NewPath("spec", "higherWorkloadDensity"), 500, "too high")}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hcoGVR := schema.GroupVersionResource{Group: gr.Group, Version: "v1beta1", Resource: gr.Resource}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{hcoGVR: "HyperConvergedList"})
			dyn.PrependReactor("patch", gr.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			e := &Engine{Cluster: &cluster.Cluster{Dynamic: dyn, Mapper: clustertest.Namespaced(kubevirt.HyperConvergedGVK)}}
			it := v1alpha1.VirtPlatformConfigItem{
				Name:         "configure-higher-density",
				Operation:    v1alpha1.OperationUpdate,
				TargetRef:    v1alpha1.ObjectReference{APIVersion: kubevirt.HyperConvergedGVK.GroupVersion().String(), Kind: "HyperConverged", Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"},
				DesiredState: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"spec":{}}`)},
			}
			_, err := e.Apply(context.Background(), &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "virt-higher-density"}}, it, Target{ReadAt: "7", Read: true})
			if err == nil {
				t.Fatal("Apply succeeded, want the server's error")
			}
			var status apierrors.APIStatus
			if !errors.As(tc.err, &status) {
				t.Fatal("test error is not an API status")
			}
			if err.Error() != status.Status().Message {
				t.Errorf("error = %q, want the server's words %q", err, status.Status().Message)
			}
			if got := transient.Is(err); got != tc.transient {
				t.Errorf("transient.Is(%q) = %v, want %v", err, got, tc.transient)
			}
			if apierrors.ReasonForError(err) != status.Status().Reason {
				t.Errorf("reason = %q, want %q", apierrors.ReasonForError(err), status.Status().Reason)
			}
		})
	}
}

// TestReadTargetsFromTheirWatch: before a write, a target that exists is
// read from the watch its config keeps current (no request), and the
// write's precondition is the resourceVersion the cache holds; a target
// reviewed as absent is read live (a create needs the list's
// resourceVersion), and so is one no current watch keeps.
func TestReadTargetsFromTheirWatch(t *testing.T) {
	watched := cluster.ObjectKey{GVK: configMapGVK, Namespace: "ns", Name: "target"}
	// In another namespace: the fake client's watch ignores field
	// selectors, so the watch of "target" would hold it too.
	unwatched := configMap("unwatched", nil, "7", "uid-2")
	unwatched.SetNamespace("other")
	ctx, c, dyn := configMapsWatched(t, "config", watched, configMap("target", map[string]interface{}{"k": "v"}, "5", "uid-1"), unwatched)
	item := func(ns, name, uid string) v1alpha1.VirtPlatformConfigItem {
		return v1alpha1.VirtPlatformConfigItem{Name: name, Operation: v1alpha1.OperationUpdate, State: v1alpha1.ItemStatePending,
			TargetRef:      v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name},
			ReviewedTarget: &v1alpha1.ReviewedTarget{UID: types.UID(uid)}}
	}
	e := &Engine{Cluster: c}
	for _, tt := range []struct {
		item     v1alpha1.VirtPlatformConfigItem
		readAt   string
		requests []string
	}{
		{item("ns", "target", "uid-1"), "5", nil},
		{item("other", "unwatched", "uid-2"), "7", []string{"get configmaps"}},
		{item("ns", "absent", ""), "3", []string{"list configmaps"}}, // the list's resourceVersion
	} {
		t.Run(tt.item.Name, func(t *testing.T) {
			dyn.ClearActions()
			_, targets, err := e.ReadTargets(ctx, []v1alpha1.VirtPlatformConfigItem{tt.item})
			if err != nil {
				t.Fatal(err)
			}
			var requests []string
			for _, a := range dyn.Actions() {
				if a.GetVerb() != "watch" {
					requests = append(requests, a.GetVerb()+" "+a.GetResource().Resource)
				}
			}
			if targets[0].ReadAt != tt.readAt || !reflect.DeepEqual(requests, tt.requests) {
				t.Errorf("read at %q with requests %v, want at %q with %v", targets[0].ReadAt, requests, tt.readAt, tt.requests)
			}
		})
	}
}
