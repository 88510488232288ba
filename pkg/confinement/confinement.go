// Package confinement says whether the admission policies that confine
// the server's own writes (artifacts/deploy/05-admission-policy.yaml) are
// in force, from the cluster's policies and bindings as its informers
// hold them: which of them a write of a resource needs, and what is wrong
// with each that is not as shipped. RBAC cannot name the MachineConfigs
// the server may change, nor the fields of a pool it may patch: only these
// policies do, so the server writes nothing they should confine while one
// of them is missing, weakened or changed. No I/O.
package confinement

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// Manifest is where the shipped policies are, named in messages.
const Manifest = "artifacts/deploy/05-admission-policy.yaml"

// Kinds of the objects checked.
const (
	PolicyKind  = "ValidatingAdmissionPolicy"
	BindingKind = "ValidatingAdmissionPolicyBinding"
)

// Shipped is the set of policies and bindings the server ships, read from
// the manifest it is built with.
type Shipped struct {
	policies []shippedPolicy
}

// shippedPolicy is one shipped policy, its bindings and the hashes of
// their specs as kube-apiserver stores them (defaults filled in).
type shippedPolicy struct {
	policy   *admissionv1.ValidatingAdmissionPolicy
	hash     string
	bindings []shippedBinding
}

type shippedBinding struct {
	name, hash string
}

// Object names one shipped policy or binding.
type Object struct {
	Kind, Name string
}

func (o Object) String() string { return o.Kind + " " + o.Name }

// Parse reads the shipped set from the manifest: every
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding in it.
// Every policy must have a binding, every binding a policy of the set.
func Parse(manifest []byte) (*Shipped, error) {
	s := &Shipped{}
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(manifest), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", Manifest, i+1, err)
		}
		switch meta.Kind {
		case PolicyKind:
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", Manifest, i+1, err)
			}
			s.policies = append(s.policies, shippedPolicy{policy: p, hash: PolicyHash(p)})
		case BindingKind:
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", Manifest, i+1, err)
			}
			bindings = append(bindings, b)
		}
	}
	for _, b := range bindings {
		i := slices.IndexFunc(s.policies, func(p shippedPolicy) bool { return p.policy.Name == b.Spec.PolicyName })
		if i < 0 {
			return nil, fmt.Errorf("%s: binding %s binds %q, which is not in the file", Manifest, b.Name, b.Spec.PolicyName)
		}
		s.policies[i].bindings = append(s.policies[i].bindings, shippedBinding{name: b.Name, hash: BindingHash(b)})
	}
	for _, p := range s.policies {
		if len(p.bindings) == 0 {
			return nil, fmt.Errorf("%s: policy %s has no binding", Manifest, p.policy.Name)
		}
	}
	if len(s.policies) == 0 {
		return nil, fmt.Errorf("%s holds no %s", Manifest, PolicyKind)
	}
	return s, nil
}

// Objects are every shipped policy and binding, in the manifest's order
// of policies, each policy before its bindings.
func (s *Shipped) Objects() []Object { return s.For(schema.GroupResource{}) }

// For are the shipped policies (each with its bindings) that confine
// writes of gr: those whose matchConstraints match it. An empty gr: every
// one.
func (s *Shipped) For(gr schema.GroupResource) []Object {
	var out []Object
	for _, p := range s.policies {
		if gr != (schema.GroupResource{}) && !confines(p.policy.Spec.MatchConstraints, gr) {
			continue
		}
		out = append(out, Object{PolicyKind, p.policy.Name})
		for _, b := range p.bindings {
			out = append(out, Object{BindingKind, b.name})
		}
	}
	return out
}

// confines is true when m matches writes of gr (its resource, not a
// subresource) and does not exclude them.
func confines(m *admissionv1.MatchResources, gr schema.GroupResource) bool {
	if m == nil {
		return false
	}
	matched := func(rules []admissionv1.NamedRuleWithOperations) bool {
		return slices.ContainsFunc(rules, func(r admissionv1.NamedRuleWithOperations) bool {
			return (slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, gr.Group)) &&
				(slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "*/*") || slices.Contains(r.Resources, gr.Resource))
		})
	}
	return matched(m.ResourceRules) && !matched(m.ExcludeResourceRules)
}

// Problem is a shipped object that is not in force as shipped.
type Problem struct {
	Object
	// What is wrong with it: "is missing", "has failurePolicy Ignore", ...
	What string
}

func (p Problem) String() string { return p.Object.String() + " " + p.What }

// Cluster is the cluster's policies and bindings, as informers hold them.
type Cluster struct {
	Policies listers.ValidatingAdmissionPolicyLister
	Bindings listers.ValidatingAdmissionPolicyBindingLister
	// Synced is true once both informers have listed (nil: they have).
	Synced func() bool
}

// Check returns what is wrong with the shipped objects that confine
// writes of gr (every shipped object for an empty gr), in the cluster c;
// none when they are all in force as shipped.
func (s *Shipped) Check(c Cluster, gr schema.GroupResource) []Problem {
	objects := s.For(gr)
	if c.Synced != nil && !c.Synced() {
		problems := make([]Problem, len(objects))
		for i, o := range objects {
			problems[i] = Problem{o, "is not read yet (the server's informers have not listed them)"}
		}
		return problems
	}
	var problems []Problem
	for _, p := range s.policies {
		if !slices.Contains(objects, Object{PolicyKind, p.policy.Name}) {
			continue
		}
		problems = append(problems, checkPolicy(c.Policies, p)...)
		for _, b := range p.bindings {
			problems = append(problems, checkBinding(c.Bindings, p.policy.Name, b)...)
		}
	}
	return problems
}

func checkPolicy(l listers.ValidatingAdmissionPolicyLister, want shippedPolicy) []Problem {
	o := Object{PolicyKind, want.policy.Name}
	got, err := l.Get(want.policy.Name)
	switch {
	case apierrors.IsNotFound(err):
		return []Problem{{o, "is missing"}}
	case err != nil:
		return []Problem{{o, "cannot be read: " + err.Error()}}
	}
	if fp := got.Spec.FailurePolicy; fp != nil && *fp != admissionv1.Fail {
		return []Problem{{o, fmt.Sprintf("has failurePolicy %s, not Fail", *fp)}}
	}
	if h := PolicyHash(got); h != want.hash {
		return []Problem{{o, fmt.Sprintf("is not the shipped one (its spec hashes to %s, the shipped one to %s)", short(h), short(want.hash))}}
	}
	return nil
}

func checkBinding(l listers.ValidatingAdmissionPolicyBindingLister, policy string, want shippedBinding) []Problem {
	o := Object{BindingKind, want.name}
	got, err := l.Get(want.name)
	switch {
	case apierrors.IsNotFound(err):
		return []Problem{{o, "is missing"}}
	case err != nil:
		return []Problem{{o, "cannot be read: " + err.Error()}}
	}
	if a := got.Spec.ValidationActions; !slices.Equal(a, []admissionv1.ValidationAction{admissionv1.Deny}) {
		return []Problem{{o, fmt.Sprintf("has validationActions %v, not [Deny]", a)}}
	}
	if got.Spec.PolicyName != policy {
		return []Problem{{o, fmt.Sprintf("binds policy %q, not %s", got.Spec.PolicyName, policy)}}
	}
	if h := BindingHash(got); h != want.hash {
		return []Problem{{o, fmt.Sprintf("is not the shipped one (its spec hashes to %s, the shipped one to %s)", short(h), short(want.hash))}}
	}
	return nil
}

func short(hash string) string { return hash[:12] }

// NotConfinedError refuses a write whose admission policies are not in
// force; it names them and what to do.
type NotConfinedError struct {
	Resource schema.GroupResource
	Problems []Problem
}

func (e *NotConfinedError) Error() string {
	what := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		what[i] = p.String()
	}
	return fmt.Sprintf("virt-advisor writes no %s while the admission policy that confines its writes there is not in force: %s. "+
		"Apply %s as shipped (kubectl apply -f), with failurePolicy Fail and validationActions [Deny]; the write goes on by itself once it is in force",
		resourceName(e.Resource), strings.Join(what, "; "), Manifest)
}

func resourceName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// IsNotConfined is true for a refusal by Writable.
func IsNotConfined(err error) bool {
	var e *NotConfinedError
	return errors.As(err, &e)
}

// Writable returns nil when every shipped object that confines writes of
// gr is in force in c, else a *NotConfinedError naming those that are not.
// A resource no shipped policy confines is never writable.
func (s *Shipped) Writable(c Cluster, gr schema.GroupResource) error {
	if len(s.For(gr)) == 0 {
		return &NotConfinedError{Resource: gr, Problems: []Problem{{Object{PolicyKind, "(none)"}, "confines it: no shipped policy matches " + resourceName(gr)}}}
	}
	if problems := s.Check(c, gr); len(problems) > 0 {
		return &NotConfinedError{Resource: gr, Problems: problems}
	}
	return nil
}

// PolicyHash is the hash of a policy's spec as kube-apiserver stores it:
// the defaults it fills in are filled in first, so the manifest's policy
// and the stored one hash alike.
func PolicyHash(p *admissionv1.ValidatingAdmissionPolicy) string {
	spec := p.Spec.DeepCopy()
	if spec.FailurePolicy == nil {
		fail := admissionv1.Fail
		spec.FailurePolicy = &fail
	}
	if spec.MatchConstraints != nil {
		defaultMatch(spec.MatchConstraints)
	}
	return hash(spec)
}

// BindingHash is PolicyHash for a binding. An unset matchResources is
// the empty one, defaulted: neither constrains what the policy matches.
func BindingHash(b *admissionv1.ValidatingAdmissionPolicyBinding) string {
	spec := b.Spec.DeepCopy()
	if spec.MatchResources == nil {
		spec.MatchResources = &admissionv1.MatchResources{}
	}
	defaultMatch(spec.MatchResources)
	return hash(spec)
}

// defaultMatch fills in the defaults of kube-apiserver
// (k8s.io/kubernetes/pkg/apis/admissionregistration/v1, defaults.go).
func defaultMatch(m *admissionv1.MatchResources) {
	if m.MatchPolicy == nil {
		equivalent := admissionv1.Equivalent
		m.MatchPolicy = &equivalent
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

func hash(v interface{}) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("hashing %T: %v", v, err)) // API types always marshal
	}
	sum := sha256.Sum256(bytes.TrimSpace(raw))
	return hex.EncodeToString(sum[:])
}
