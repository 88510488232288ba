package deploy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// kube-apiserver sets up a program, its activation and its cost tracker
// for every validation of a policy, for every variable it reads and for
// every messageExpression, and evaluates each messageExpression on every
// write, admitted or not: a KubeDescheduler update of ours ran about 70
// programs. So each policy per resource is deployed guarded: its one
// match condition is true only for a write of the server's that breaks
// one of its rules, the conjunction of the rules with the variables they
// read written out in place (a match condition cannot read variables),
// and false at the first rule that holds not, or for anyone else's write
// at the user name. A write of ours that keeps the rules costs one
// program; one that breaks them is decided by the validations
// themselves, unchanged, which say which rule it broke. Written out, the
// maps keyed by resource keep the entries of the policy's resource only
// (every lookup in them is by its key), which halves the condition.
const guardName = "virt-advisor-apiserver-breaks-a-rule"

// guard is p whose match condition applies it only to the server's
// writes that break one of its rules.
func guard(t testing.TB, p *admissionv1.ValidatingAdmissionPolicy) *admissionv1.ValidatingAdmissionPolicy {
	out := p.DeepCopy()
	vars := map[string]string{}
	for _, v := range p.Spec.Variables {
		vars[v.Name] = v.Expression
	}
	// The policy matches one resource: the maps keyed by resource are
	// looked up with its key only.
	r := p.Spec.MatchConstraints.ResourceRules[0]
	res := r.APIGroups[0] + "/" + r.Resources[0]
	vars["resource"] = celString(res)
	for name, expression := range vars {
		if m, ok := resourceMap(expression); ok {
			for key := range m {
				if key != res && !strings.HasPrefix(key, res+":") {
					delete(m, key)
				}
			}
			vars[name] = celLiteral(m, "")
		}
	}
	inlined := map[string]string{}
	var inline func(expression string) string
	inline = func(expression string) string {
		return variableRef.ReplaceAllStringFunc(oneLine(expression), func(ref string) string {
			name := strings.TrimPrefix(ref, "variables.")
			if _, ok := inlined[name]; !ok {
				inlined[name] = "(" + inline(vars[name]) + ")"
			}
			return inlined[name]
		})
	}
	var who []string
	for _, c := range p.Spec.MatchConditions {
		who = append(who, "("+oneLine(c.Expression)+")")
	}
	rules := make([]string, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		rules[i] = "(" + inline(v.Expression) + ")"
	}
	out.Spec.MatchConditions = []admissionv1.MatchCondition{{
		Name:       guardName,
		Expression: strings.Join(who, " && ") + " && !(\n" + strings.Join(rules, " &&\n") + "\n)",
	}}
	return out
}

// resourceKey is a key of a map keyed by resource: <group>/<resource>,
// perhaps with :<name>.
var resourceKey = regexp.MustCompile(`^[a-z0-9.-]*/[a-z]+(:.*)?$`)

// resourceMap is the value of a variable that is a literal map keyed by
// resource (variables.operations, variables.ownSpecByResource …).
func resourceMap(expression string) (map[string]interface{}, bool) {
	env, err := cel.NewEnv()
	if err != nil {
		return nil, false
	}
	ast, iss := env.Compile(expression)
	if iss.Err() != nil {
		return nil, false
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, false
	}
	out, _, err := prg.Eval(cel.NoVars())
	if err != nil {
		return nil, false
	}
	native, err := out.ConvertToNative(reflect.TypeOf(map[string]interface{}{}))
	if err != nil {
		return nil, false
	}
	m := native.(map[string]interface{})
	for key := range m {
		if !resourceKey.MatchString(key) {
			return nil, false
		}
	}
	for key, v := range m {
		m[key] = normalize(v)
	}
	return m, len(m) > 0
}

// celString is s as a CEL string literal.
func celString(s string) string {
	return strconv.Quote(s)
}

// oneLine is a CEL expression on one line: its line breaks (which a
// YAML block keeps) are between tokens, as no CEL string literal but a
// triple-quoted one spans lines, and the policy has none.
func oneLine(expression string) string {
	return strings.ReplaceAll(strings.TrimSpace(expression), "\n", " ")
}

// decided records, per policy per resource, which of its unfused rules
// denied a request of the tests (-1: one admitted).
var decided = ruleRecord{}

type ruleRecord map[string]*decisions

type decisions struct {
	policy *admissionv1.ValidatingAdmissionPolicy
	rules  map[int]bool
}

func (d ruleRecord) record(p *admissionv1.ValidatingAdmissionPolicy, denying []int) {
	if d[p.Name] == nil {
		d[p.Name] = &decisions{policy: p, rules: map[int]bool{}}
	}
	if len(denying) == 0 {
		d[p.Name].rules[-1] = true
	}
	for _, rule := range denying {
		d[p.Name].rules[rule] = true
	}
}

// TestMain: after a run of every test, each rule of each policy per
// resource has denied some request, and each policy has admitted some, so that the fused policies were compared with the unfused ones
// on every rule, allow and deny.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.bench").Value.String() == "" {
		if missing := decided.missing(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no request of the tests was decided by these rules of the policies per resource, so their fused form was not compared with them there:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// missing are the rules no request was denied by (and the policies
// that admitted none).
func (d ruleRecord) missing() []string {
	var names []string
	for name := range d {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		p := d[name].policy
		for i := -1; i < len(p.Spec.Validations); i++ {
			switch {
			case d[name].rules[i]:
			case i < 0:
				out = append(out, name+": no write admitted")
			default:
				out = append(out, fmt.Sprintf("%s: rule %d (%s)", name, i, oneLine(p.Spec.Validations[i].Expression)))
			}
		}
	}
	return out
}

// oursPerResource is an object of each resource the server writes as
// its writes leave it.
func oursPerResource(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	desired := desiredObjects(t)
	c := newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])
	kd, _ := c.Get(context.Background(), profiles.KubeDeschedulerGVK, profiles.DeschedulerNamespace, profiles.DeschedulerName)
	return []*unstructured.Unstructured{
		created(desired["enable-psi-metrics"], "load-aware-rebalancing"),
		created(desired["configure-dedicated-cpus"], "dedicated-cpus"),
		created(desired["configure-example-component"], "example-profile"),
		readObject(t, filepath.Join("..", "testdata", "baseline.yaml"), "MachineConfigPool"),
		baselineHCO(kubevirt.HCOVersionV1beta1),
		applied(kd, desired["enable-load-aware-descheduling"]),
	}
}

// BenchmarkPolicyOnAnUpdateOfOurs: what the policy of each resource
// costs on an update of the server's that changes nothing, unguarded and
// as deployed (guarded).
func BenchmarkPolicyOnAnUpdateOfOurs(b *testing.B) {
	d := compileDeployed(b)
	for _, obj := range oursPerResource(b) {
		r := request{op: admission.Update, gvr: gvrOf(obj), obj: edited(obj, func(map[string]interface{}) {}), old: obj}
		for _, bc := range []struct {
			name   string
			review func(request) string
		}{
			{"unguarded", d.reviewUnguarded},
			{"as deployed", d.review},
		} {
			b.Run(r.gvr.Resource+"/"+bc.name, func(b *testing.B) {
				if denied := bc.review(r); denied != "" {
					b.Fatal(denied)
				}
				b.ReportAllocs()
				for b.Loop() {
					bc.review(r)
				}
			})
		}
	}
}

// TestEveryRuleOnEveryResource: the rules every policy per resource
// holds (metadata, labels, annotations, fields outside the spec and the
// spec of an object the server writes) deny on each resource, so that
// their fused form is compared with them there too (review).
func TestEveryRuleOnEveryResource(t *testing.T) {
	v := compileDeployed(t)
	ours := oursPerResource(t)
	changes := []struct {
		name   string
		op     admission.Operation
		change func(map[string]interface{})
	}{
		{"created with an owner", admission.Create, func(o map[string]interface{}) {
			set(o, []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "x"}}, "metadata", "ownerReferences")
		}},
		{"a finalizer", admission.Update, func(o map[string]interface{}) { set(o, []interface{}{"example.com/x"}, "metadata", "finalizers") }},
		{"a label", admission.Update, func(o map[string]interface{}) { set(o, "x", "metadata", "labels", "example.com/x") }},
		{"an annotation", admission.Update, func(o map[string]interface{}) { set(o, "x", "metadata", "annotations", "example.com/x") }},
		{"a field beside the spec", admission.Update, func(o map[string]interface{}) { set(o, "x", "x") }},
		{"a field of the spec", admission.Update, func(o map[string]interface{}) { set(o, "x", "spec", "x") }},
		{"a key of the data of others", admission.Update, func(o map[string]interface{}) {
			if o["kind"] == "ConfigMap" {
				set(o, "x", "data", "x")
			}
		}},
		{"an eviction limit of others", admission.Update, func(o map[string]interface{}) {
			if o["kind"] == "KubeDescheduler" {
				set(o, int64(1), "spec", "evictionLimits", "x")
			}
		}},
	}
	for _, obj := range ours {
		gvr := gvrOf(obj)
		if got := review(t, v, request{op: admission.Update, gvr: gvr, obj: edited(obj, func(map[string]interface{}) {}), old: obj}); got != "" {
			t.Fatalf("%s %s: the server's own update is denied: %s", obj.GetKind(), obj.GetName(), got)
		}
		for _, ch := range changes {
			r := request{op: ch.op, gvr: gvr, obj: edited(obj, ch.change), old: obj}
			if ch.op == admission.Create {
				r = request{op: ch.op, gvr: gvr, obj: changed(obj, ch.change)}
			}
			if equality.Semantic.DeepEqual(r.obj.Object, edited(obj, func(map[string]interface{}) {}).Object) {
				continue
			}
			if got := review(t, v, r); got == "" {
				t.Errorf("%s %s, %s: admitted", obj.GetKind(), obj.GetName(), ch.name)
			}
		}
	}
}

// reviewUnguarded is review by the policy per resource without its guard.
func (d *deployed) reviewUnguarded(r request) string {
	for _, u := range d.unfused {
		if matches(u.policy.Spec.MatchConstraints, r) {
			return reviewBy(u.validator, r)
		}
	}
	return ""
}
