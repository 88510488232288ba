package confinement

import (
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/artifacts/deploy"
)

var (
	machineConfigs = schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigs"}
	kubeletConfigs = schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "kubeletconfigs"}
	pools          = schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools"}
	deschedulers   = schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}
	hyperConverged = schema.GroupResource{Group: "hco.kubevirt.io", Resource: "hyperconvergeds"}
	configMaps     = schema.GroupResource{Resource: "configmaps"}
)

const (
	mcPolicy = "virt-advisor-apiserver-writes-machineconfigs"
	catchAll = "virt-advisor-apiserver-writes"
)

func shipped(t *testing.T) *Shipped {
	t.Helper()
	s, err := Parse(deploy.AdmissionPolicies)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stored are the shipped objects as kube-apiserver stores them: its
// defaults filled in, so that the hashes are shown to see through them.
func stored(t *testing.T) ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policies []*admissionv1.ValidatingAdmissionPolicy
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range strings.Split(string(deploy.AdmissionPolicies), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case PolicyKind:
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.Unmarshal([]byte(doc), p); err != nil {
				t.Fatal(err)
			}
			defaultMatch(p.Spec.MatchConstraints)
			p.ResourceVersion, p.Generation = "7", 1
			policies = append(policies, p)
		case BindingKind:
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.Unmarshal([]byte(doc), b); err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, b)
		}
	}
	return policies, bindings
}

func clusterOf(t *testing.T, policies []*admissionv1.ValidatingAdmissionPolicy, bindings []*admissionv1.ValidatingAdmissionPolicyBinding) Cluster {
	t.Helper()
	pi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range policies {
		if err := pi.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	bi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, b := range bindings {
		if err := bi.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	return Cluster{Policies: listers.NewValidatingAdmissionPolicyLister(pi), Bindings: listers.NewValidatingAdmissionPolicyBindingLister(bi)}
}

// TestShippedObjectsPerResource: the policies each resource the server
// writes needs come from the manifest's match rules, with their bindings.
func TestShippedObjectsPerResource(t *testing.T) {
	s := shipped(t)
	if got := len(s.Objects()); got != 14 {
		t.Errorf("%d shipped objects, want 7 policies and 7 bindings: %v", got, s.Objects())
	}
	for _, tc := range []struct {
		gr   schema.GroupResource
		want string
	}{
		{machineConfigs, "virt-advisor-apiserver-writes-machineconfigs"},
		{kubeletConfigs, "virt-advisor-apiserver-writes-kubeletconfigs"},
		{pools, "virt-advisor-apiserver-writes-machineconfigpools"},
		{deschedulers, "virt-advisor-apiserver-writes-kubedeschedulers"},
		{hyperConverged, "virt-advisor-apiserver-writes-hyperconvergeds"},
		{configMaps, "virt-advisor-apiserver-writes-configmaps"},
		// Nothing the server writes: the policy that refuses the rest.
		{schema.GroupResource{Group: "operator.openshift.io", Resource: "machineconfigurations"}, catchAll},
	} {
		want := []Object{{PolicyKind, tc.want}, {BindingKind, tc.want}}
		if got := s.For(tc.gr); !reflect.DeepEqual(got, want) {
			t.Errorf("For(%s) = %v, want %v", tc.gr, got, want)
		}
	}
	if got := s.For(schema.GroupResource{Resource: "secrets"}); len(got) != 0 {
		t.Errorf("For(secrets) = %v, want none", got)
	}
	if got := s.For(schema.GroupResource{}); !reflect.DeepEqual(got, s.Objects()) {
		t.Errorf("For(everything) = %v, want every object", got)
	}
}

func TestWritable(t *testing.T) {
	s := shipped(t)
	edit := func(policy func(*admissionv1.ValidatingAdmissionPolicy), binding func(*admissionv1.ValidatingAdmissionPolicyBinding)) func(*testing.T) Cluster {
		return func(t *testing.T) Cluster {
			policies, bindings := stored(t)
			var keptPolicies []*admissionv1.ValidatingAdmissionPolicy
			for _, p := range policies {
				if p.Name == mcPolicy && policy != nil {
					if policy(p); p.Name == "" {
						continue // deleted
					}
				}
				keptPolicies = append(keptPolicies, p)
			}
			var keptBindings []*admissionv1.ValidatingAdmissionPolicyBinding
			for _, b := range bindings {
				if b.Name == mcPolicy && binding != nil {
					if binding(b); b.Name == "" {
						continue
					}
				}
				keptBindings = append(keptBindings, b)
			}
			return clusterOf(t, keptPolicies, keptBindings)
		}
	}
	deny := []admissionv1.ValidationAction{admissionv1.Deny}
	for _, tc := range []struct {
		name    string
		cluster func(*testing.T) Cluster
		gr      schema.GroupResource
		// problem: "" when writable, else what the refusal says.
		problem string
	}{
		{name: "as shipped, as kube-apiserver stores it", cluster: edit(nil, nil), gr: machineConfigs},
		{name: "as shipped: pools", cluster: edit(nil, nil), gr: pools},
		{name: "as shipped: KubeletConfigs", cluster: edit(nil, nil), gr: kubeletConfigs},
		{name: "the binding deleted", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) { b.Name = "" }), gr: machineConfigs,
			problem: "ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigs is missing"},
		{name: "the policy deleted", cluster: edit(func(p *admissionv1.ValidatingAdmissionPolicy) { p.Name = "" }, nil), gr: machineConfigs,
			problem: "ValidatingAdmissionPolicy virt-advisor-apiserver-writes-machineconfigs is missing"},
		{name: "never installed", cluster: func(t *testing.T) Cluster { return clusterOf(t, nil, nil) }, gr: pools,
			problem: "ValidatingAdmissionPolicy virt-advisor-apiserver-writes-machineconfigpools is missing; ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigpools is missing"},
		{name: "the binding set to Warn", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		}), gr: machineConfigs, problem: "ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigs has validationActions [Warn], not [Deny]"},
		{name: "the binding set to Audit", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Audit}
		}), gr: machineConfigs, problem: "has validationActions [Audit], not [Deny]"},
		{name: "the binding set to Deny and Warn", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Deny, admissionv1.Warn}
		}), gr: machineConfigs, problem: "has validationActions [Deny Warn], not [Deny]"},
		{name: "the policy set to failurePolicy Ignore", cluster: edit(func(p *admissionv1.ValidatingAdmissionPolicy) {
			ignore := admissionv1.Ignore
			p.Spec.FailurePolicy = &ignore
		}, nil), gr: machineConfigs, problem: "ValidatingAdmissionPolicy virt-advisor-apiserver-writes-machineconfigs has failurePolicy Ignore, not Fail"},
		{name: "a validation of the policy changed", cluster: edit(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "true"
		}, nil), gr: machineConfigs, problem: "ValidatingAdmissionPolicy virt-advisor-apiserver-writes-machineconfigs is not the shipped one (its spec hashes to "},
		{name: "the policy matches fewer objects", cluster: edit(func(p *admissionv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"confined": "yes"}}
		}, nil), gr: machineConfigs, problem: "is not the shipped one"},
		{name: "the binding matches fewer objects", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}), gr: machineConfigs, problem: "ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigs is not the shipped one"},
		{name: "the binding's matchResources defaulted as stored", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{}
			defaultMatch(b.Spec.MatchResources)
		}), gr: machineConfigs},
		{name: "the binding binds another policy", cluster: edit(nil, func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = "something-else"
			b.Spec.ValidationActions = deny
		}), gr: machineConfigs, problem: `binds policy "something-else", not virt-advisor-apiserver-writes-machineconfigs`},
		{name: "another resource's binding deleted: MachineConfigs are still confined", cluster: func(t *testing.T) Cluster {
			policies, bindings := stored(t)
			var kept []*admissionv1.ValidatingAdmissionPolicyBinding
			for _, b := range bindings {
				if b.Name != "virt-advisor-apiserver-writes-kubedeschedulers" {
					kept = append(kept, b)
				}
			}
			return clusterOf(t, policies, kept)
		}, gr: machineConfigs},
		{name: "... but KubeDeschedulers are not", cluster: func(t *testing.T) Cluster {
			policies, bindings := stored(t)
			var kept []*admissionv1.ValidatingAdmissionPolicyBinding
			for _, b := range bindings {
				if b.Name != "virt-advisor-apiserver-writes-kubedeschedulers" {
					kept = append(kept, b)
				}
			}
			return clusterOf(t, policies, kept)
		}, gr: deschedulers, problem: "ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-kubedeschedulers is missing"},
		{name: "policies of others are not ours to judge", cluster: func(t *testing.T) Cluster {
			policies, bindings := stored(t)
			other := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-psi"}}
			return clusterOf(t, append(policies, other), bindings)
		}, gr: machineConfigs},
		{name: "informers not synced yet", cluster: func(t *testing.T) Cluster {
			c := edit(nil, nil)(t)
			c.Synced = func() bool { return false }
			return c
		}, gr: machineConfigs, problem: "ValidatingAdmissionPolicy virt-advisor-apiserver-writes-machineconfigs is not read yet"},
		{name: "a resource no shipped policy confines", cluster: edit(nil, nil), gr: schema.GroupResource{Resource: "secrets"},
			problem: "no shipped policy matches secrets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Writable(tc.cluster(t), tc.gr)
			switch {
			case tc.problem == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.problem == "":
				return
			case err == nil:
				t.Fatalf("writable, want refused: %s", tc.problem)
			case !IsNotConfined(err):
				t.Fatalf("%T is not a NotConfinedError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("refusal\n%v\ndoes not say\n%s", err, tc.problem)
			}
			for _, says := range []string{"virt-advisor writes no " + resourceName(tc.gr), "Apply " + Manifest + " as shipped"} {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("refusal %q does not say %q", err, says)
				}
			}
		})
	}
}

// TestCheckEverything: with no resource, every shipped object is checked
// (readiness, the metric).
func TestCheckEverything(t *testing.T) {
	s := shipped(t)
	policies, bindings := stored(t)
	if got := s.Check(clusterOf(t, policies, bindings), schema.GroupResource{}); len(got) != 0 {
		t.Fatalf("as shipped: %v", got)
	}
	got := s.Check(clusterOf(t, policies, bindings[1:]), schema.GroupResource{})
	want := []Problem{{Object{BindingKind, catchAll}, "is missing"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without the first binding: %v, want %v", got, want)
	}
}

func TestParseRefusesAnIncompleteSet(t *testing.T) {
	policy := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: a\nspec:\n  failurePolicy: Fail\n"
	binding := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: b\nspec:\n  policyName: %s\n  validationActions: [Deny]\n"
	for _, tc := range []struct{ name, manifest, err string }{
		{"a policy without binding", policy, "policy a has no binding"},
		{"a binding of another policy", policy + "---\n" + strings.Replace(binding, "%s", "c", 1), `binding b binds "c"`},
		{"nothing", "", "holds no ValidatingAdmissionPolicy"},
		{"an unknown field", strings.Replace(policy, "failurePolicy", "failurePolicies", 1) + "---\n" + strings.Replace(binding, "%s", "a", 1), "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.manifest)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse: %v, want %q", err, tc.err)
			}
		})
	}
	if s, err := Parse([]byte(policy + "---\n" + strings.Replace(binding, "%s", "a", 1))); err != nil || len(s.Objects()) != 2 {
		t.Errorf("a policy and its binding: %v, %v", s, err)
	}
}
