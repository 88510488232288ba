// Package example is a minimal, unadvertised profile that manages one
// ConfigMap; it exercises the plan engine without OpenShift APIs.
package example

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

type profile struct{}

// New returns the example profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:          "example-profile",
		Category:      "example",
		Description:   "Example profile that manages one ConfigMap",
		ImpactSummary: "Low - writes the ConfigMap openshift-cnv/example-config",
		Level:         v1alpha1.ImpactLow,
		Writes: []profiles.Write{{Resource: schema.GroupResource{Resource: "configmaps"}, Namespace: kubevirt.HCONamespace, Name: "example-config",
			Create: true, Delete: true, Fields: []string{"data"}, Why: "example-profile's data; deleted by its revert"}},
		Examples: []profiles.Example{{Name: "example-profile"}},
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite { return nil }

func (profile) Items(context.Context, profiles.Inputs) ([]profiles.Item, error) {
	cm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"name": "example-config", "namespace": kubevirt.HCONamespace},
		"data":       map[string]interface{}{"example-key": "example-value"},
	}}
	return []profiles.Item{{
		Name:          "configure-example-component",
		Desired:       cm,
		ManagedFields: []string{"data"},
		Impact:        v1alpha1.ImpactLow,
		Message:       "ConfigMap 'example-config' will be configured",
		Owned:         true,
	}}, nil
}

func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return ""
}
