package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/artifacts/deploy"
	"github.com/kubevirt/virt-advisor/pkg/confinement"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
)

var (
	machineConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	deschedulerGVK   = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
)

const mcBinding = "virt-advisor-apiserver-writes-machineconfigs"

// TestGuardFollowsTheCluster: the guard reads the cluster's policies and
// bindings from its informers, refuses the writes whose binding is gone,
// fails its readyz check and reports the metric, and lets them be written
// again once the binding is back.
func TestGuardFollowsTheCluster(t *testing.T) {
	metrics.Register()
	kube := fake.NewClientset()
	ctx := context.Background()
	var binding *admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range strings.Split(string(deploy.AdmissionPolicies), "\n---\n") {
		var m metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		switch m.Kind {
		case confinement.PolicyKind:
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.Unmarshal([]byte(doc), p); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case confinement.BindingKind:
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.Unmarshal([]byte(doc), b); err != nil {
				t.Fatal(err)
			}
			if b.Name == mcBinding {
				binding = b // left out: deleted, or never installed
				continue
			}
			if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(machineConfigGVK, meta.RESTScopeRoot)
	mapper.Add(deschedulerGVK, meta.RESTScopeNamespace)
	g, err := newGuard(kube, mapper)
	if err != nil {
		t.Fatal(err)
	}
	started, stop := context.WithCancel(ctx)
	defer stop()
	g.Start(started)

	eventually(t, func() error { return g.Writable(deschedulerGVK) })
	err = g.Writable(machineConfigGVK)
	if !confinement.IsNotConfined(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicyBinding "+mcBinding+" is missing") {
		t.Fatalf("MachineConfigs without their binding: %v, want refused naming the binding", err)
	}
	if err := g.Check(nil); err == nil || !strings.Contains(err.Error(), mcBinding+" is missing") {
		t.Errorf("readyz check: %v, want it to name the missing binding", err)
	}
	inForce := func(name string) float64 {
		v, err := testutil.GetGaugeMetricValue(metrics.AdmissionPolicyInForceGauge.WithLabelValues(confinement.BindingKind, name))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The informers' handlers report after their caches hold the objects.
	metricIs := func(name string, want float64) func() error {
		return func() error {
			if v := inForce(name); v != want {
				return fmt.Errorf("metric of %s is %v, want %v", name, v, want)
			}
			return nil
		}
	}
	eventually(t, metricIs(mcBinding, 0))
	eventually(t, metricIs("virt-advisor-apiserver-writes-kubedeschedulers", 1))
	if err := g.Writable(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Unknown"}); err == nil {
		t.Error("a kind the mapper does not know is writable, want refused")
	}

	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error { return g.Writable(machineConfigGVK) })
	if err := g.Check(nil); err != nil {
		t.Errorf("readyz check with everything in force: %v", err)
	}
	eventually(t, metricIs(mcBinding, 1))
}

func eventually(t *testing.T, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
