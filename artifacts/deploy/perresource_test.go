package deploy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"
)

// The policy with every rule (the first of 05-admission-policy.yaml) is
// applied per resource: kube-apiserver evaluates each expression of a
// policy that matches a write, and half of the policy's cost on a write
// of ours was rules for other resources. A KubeDescheduler update costs
// 1.0-1.1 ms in process with every rule, 0.62 ms as deployed
// (BenchmarkPolicyOnAKubeDeschedulerUpdate); in kube-apiserver the one
// policy added 2.3-2.6 ms to a server-side apply of 5.7 ms, the policy of
// the KubeDescheduler adds 0.6-1.4 ms. So for
// each resource the server writes, a policy generated from the one with
// every rule holds the rules that concern that resource and the
// variables they read; the policy with every rule excludes those
// resources and refuses everything else (subresources, other resources
// of the API groups).
const (
	perResourceStart = "# GENERATED per resource from the policy virt-advisor-apiserver-writes above"
	perResourceEnd   = "# END GENERATED per resource\n"
	excludeStart     = "    # GENERATED: the resources of the policies per resource at the end of this file"
	excludeEnd       = "    # END GENERATED\n"
)

// catchAllOnly are the validations of the policy with every rule that a
// policy per resource needs not: it matches its resource only, no
// subresource.
var catchAllOnly = []string{
	"request.?subResource.orValue('') == ''",
	"variables.resource in variables.operations",
}

// guards: a validation that starts with a guard holds for any write of
// another resource than the guard's; it is only in that resource's
// policy. The guard variables are checked to say what they say.
var guards = map[string]string{
	"!variables.isHCO ||":                "hco.kubevirt.io/hyperconvergeds",
	"!variables.isPool ||":               "machineconfiguration.openshift.io/machineconfigpools",
	"!variables.isMachineConfig ||":      "machineconfiguration.openshift.io/machineconfigs",
	"!variables.isSwap ||":               "machineconfiguration.openshift.io/machineconfigs",
	"!variables.isKSMZeroPages ||":       "machineconfiguration.openshift.io/machineconfigs",
	"!variables.isKubeletConfig ||":      "machineconfiguration.openshift.io/kubeletconfigs",
	"!variables.isConfigMap ||":          "/configmaps",
	"!variables.isDescheduler ||":        "operator.openshift.io/kubedeschedulers",
	"variables.templates.size() == 0 ||": "", // the resources with name templates (objectTemplates)
}

// guardVariables are the expressions the guards' variables must have.
var guardVariables = map[string]string{
	"isHCO":           "variables.resource == 'hco.kubevirt.io/hyperconvergeds'",
	"isPool":          "variables.resource == 'machineconfiguration.openshift.io/machineconfigpools'",
	"isMachineConfig": "variables.resource == 'machineconfiguration.openshift.io/machineconfigs'",
	"isSwap":          "variables.isMachineConfig && ",
	"isKSMZeroPages":  "variables.isMachineConfig && ",
	"isKubeletConfig": "variables.resource == 'machineconfiguration.openshift.io/kubeletconfigs'",
	"isConfigMap":     "variables.resource == '/configmaps'",
	"isDescheduler":   "variables.resource == 'operator.openshift.io/kubedeschedulers'",
	"templates":       "variables.objectTemplates[?variables.resource].orValue([]).filter(",
}

var variableRef = regexp.MustCompile(`variables\.([A-Za-z0-9_]+)`)

// perResource derives the policy of each resource source writes.
func perResource(t testing.TB, source *admissionv1.ValidatingAdmissionPolicy) []*admissionv1.ValidatingAdmissionPolicy {
	t.Helper()
	byName := map[string]string{}
	for _, v := range source.Spec.Variables {
		byName[v.Name] = v.Expression
	}
	for name, prefix := range guardVariables {
		if !strings.HasPrefix(strings.TrimSpace(byName[name]), prefix) {
			t.Fatalf("%s: variable %s is %q; the policies per resource take it for %q", policyFile, name, byName[name], prefix)
		}
	}
	templated := literal(t, source, "objectTemplates").(map[string]interface{})
	operations := literal(t, source, "operations").(map[string]interface{})
	named := literal(t, source, "objects").(map[string]interface{})
	var resources []string
	for res := range operations {
		resources = append(resources, res)
	}
	sort.Strings(resources)
	var out []*admissionv1.ValidatingAdmissionPolicy
	for _, res := range resources {
		var validations []admissionv1.Validation
		for _, v := range source.Spec.Validations {
			if concerns(t, v, res, templated) && !alwaysHolds(v, res, operations, named) {
				validations = append(validations, v)
			}
		}
		group, resource, _ := strings.Cut(res, "/")
		p := &admissionv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: source.Name + "-" + resource, Labels: source.Labels},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: source.Spec.FailurePolicy,
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
						Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
					},
				}}},
				MatchConditions: source.Spec.MatchConditions,
				Variables:       readBy(source.Spec.Variables, validations),
				Validations:     validations,
			},
		}
		out = append(out, p)
	}
	return out
}

// concerns is true when validation v can deny a write of res (resource
// key, as in variables.operations) that is no subresource's.
func concerns(t testing.TB, v admissionv1.Validation, res string, templated map[string]interface{}) bool {
	t.Helper()
	for _, e := range catchAllOnly {
		if v.Expression == e {
			return false
		}
	}
	for guard, guarded := range guards {
		if !strings.HasPrefix(v.Expression, guard) {
			continue
		}
		if guarded == "" {
			_, ok := templated[res]
			return ok
		}
		return guarded == res
	}
	if strings.HasPrefix(v.Expression, "!variables.is") && !strings.HasPrefix(v.Expression, "!variables.isUpdate ||") {
		t.Fatalf("%s: validation %q starts with a guard the policies per resource do not know: add it to guards", policyFile, v.Expression)
	}
	return true
}

// The rules of the policy with every rule that name the operations and
// the objects of each resource.
const (
	operationsRule = "!(variables.resource in variables.operations) || request.operation in variables.operations[variables.resource]"
	objectsRule    = "!(variables.resource in variables.objects) ||"
)

// alwaysHolds is true for a rule that admits every write of res a policy
// per resource matches: the operations of a resource that may be
// created, changed and deleted (its policy matches those three only),
// the objects of one whose objects are not named (the pools).
func alwaysHolds(v admissionv1.Validation, res string, operations, named map[string]interface{}) bool {
	switch {
	case v.Expression == operationsRule:
		ops, _ := operations[res].([]interface{})
		return len(ops) == 3
	case strings.HasPrefix(v.Expression, objectsRule):
		_, ok := named[res]
		return !ok
	}
	return false
}

// readBy are the variables the validations read, directly or through
// other variables, in their order in vars.
func readBy(vars []admissionv1.Variable, validations []admissionv1.Validation) []admissionv1.Variable {
	byName := map[string]string{}
	for _, v := range vars {
		byName[v.Name] = v.Expression
	}
	read := map[string]bool{}
	var walk func(expression string)
	walk = func(expression string) {
		for _, m := range variableRef.FindAllStringSubmatch(expression, -1) {
			if !read[m[1]] {
				read[m[1]] = true
				walk(byName[m[1]])
			}
		}
	}
	for _, v := range validations {
		walk(v.Expression)
		walk(v.MessageExpression)
	}
	var out []admissionv1.Variable
	for _, v := range vars {
		if read[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// perResourceBlock is the policies per resource and their bindings as
// the end of the file.
func perResourceBlock(t *testing.T, policies []*admissionv1.ValidatingAdmissionPolicy) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(perResourceStart + doNotEdit)
	for _, p := range policies {
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: p.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
		}
		for _, obj := range []interface{}{p, binding} {
			raw, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			// Nothing is set by the server yet.
			text := strings.Replace(string(raw), "  creationTimestamp: null\n", "", 1)
			text = strings.TrimSuffix(text, "status: {}\n")
			b.WriteString("---\n" + text)
		}
	}
	return b.String()
}

// excludeBlock is the exclusion from the policy with every rule of the
// resources that have a policy of their own.
func excludeBlock(policies []*admissionv1.ValidatingAdmissionPolicy) string {
	var b strings.Builder
	b.WriteString(excludeStart + doNotEdit)
	b.WriteString("    excludeResourceRules:\n")
	for _, p := range policies {
		r := p.Spec.MatchConstraints.ResourceRules[0]
		var ops []string
		for _, op := range r.Operations {
			ops = append(ops, fmt.Sprintf("%q", op))
		}
		fmt.Fprintf(&b, "    - apiGroups: [%q]\n      apiVersions: [\"*\"]\n      operations: [%s]\n      resources: [%q]\n",
			r.APIGroups[0], strings.Join(ops, ", "), r.Resources[0])
	}
	return b.String()
}

// TestPoliciesPerResourceAreDerived: the policies per resource at the end
// of the file, and the exclusion of their resources from the policy with
// every rule, are what the policy with every rule makes (-update rewrites
// them).
func TestPoliciesPerResourceAreDerived(t *testing.T) {
	source, _ := readPolicy(t)
	var policies []*admissionv1.ValidatingAdmissionPolicy
	for _, p := range perResource(t, source) {
		policies = append(policies, guard(t, p))
	}
	syncFileBlock(t, policyFile, excludeStart, excludeEnd, excludeBlock(policies))
	syncFileBlock(t, policyFile, perResourceStart, perResourceEnd, perResourceBlock(t, policies))
}

// BenchmarkPolicyOnAKubeDeschedulerUpdate: what evaluating the admission
// policies costs on a write of the server (its mode changed), with the
// policy with every rule alone, with the policy per resource without its
// guard (fused_test.go) and with the policies as deployed.
func BenchmarkPolicyOnAKubeDeschedulerUpdate(b *testing.B) {
	d := compileDeployed(b)
	old := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operator.openshift.io/v1", "kind": "KubeDescheduler",
		"metadata": map[string]interface{}{"name": "cluster", "namespace": "openshift-kube-descheduler-operator", "resourceVersion": "1"},
		"spec": map[string]interface{}{"managementState": "Managed", "mode": "Predictive", "deschedulingIntervalSeconds": int64(3600),
			"profiles": []interface{}{"KubeVirtRelieveAndMigrate"}, "profileCustomizations": map[string]interface{}{"devEnableSoftTainter": true}},
	}}
	obj := changed(old, func(o map[string]interface{}) { set(o, "Automatic", "spec", "mode") })
	r := request{op: admission.Update, gvr: kubeDeschedulers, obj: obj, old: old}
	for _, bc := range []struct {
		name   string
		review func(request) string
	}{
		{"every rule", func(r request) string { return reviewBy(d.reference, r) }},
		{"per resource, unguarded", func(r request) string { return d.reviewUnguarded(r) }},
		{"as deployed", d.review},
	} {
		b.Run(bc.name, func(b *testing.B) {
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
