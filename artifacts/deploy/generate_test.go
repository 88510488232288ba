package deploy

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
	"github.com/kubevirt/virt-advisor/pkg/profiles/loadaware"
)

// The generated parts of the policy: each from its start line to the next
// generatedEnd.
const (
	swapStart    = "  # GENERATED from pkg/profiles/higherdensity"
	generatedEnd = "  # END GENERATED"
	doNotEdit    = " by `go test ./artifacts/deploy -update`: do not edit.\n"
)

// namedValue is one generated variable.
type namedValue struct {
	name  string
	value interface{}
}

// block writes variables as CEL literals under the start line.
func block(start string, vars []namedValue) string {
	var b strings.Builder
	b.WriteString(start + doNotEdit)
	for _, v := range vars {
		fmt.Fprintf(&b, "  - name: %s\n    expression: |-\n      %s\n", v.name, celLiteral(v.value, "      "))
	}
	return b.String()
}

// syncBlock compares the policy's block that begins with start with
// generated; with -update it rewrites it (and returns true), else a
// difference fails the test.
func syncBlock(t *testing.T, start, generated string) bool {
	t.Helper()
	return syncFileBlock(t, policyFile, start, generatedEnd, generated)
}

// syncFileBlock is syncBlock on any file, with its own end line.
func syncFileBlock(t *testing.T, file, start, end, generated string) bool {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	from := strings.Index(string(raw), start)
	to := -1
	if from >= 0 {
		to = strings.Index(string(raw[from:]), end)
	}
	if from < 0 || to < 0 {
		t.Fatalf("%s: no %q ... %q block", file, start, end)
	}
	to += from
	if string(raw[from:to]) == generated {
		return false
	}
	if !*update {
		t.Fatalf("%s: the block %q is not what the profiles write: run `go test ./artifacts/deploy -update`\nit holds\n%s\nthe profiles make\n%s",
			file, strings.TrimSpace(start), raw[from:to], generated)
	}
	out := string(raw[:from]) + generated + string(raw[to:])
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %q into %s", strings.TrimSpace(start), file)
	return true
}

// swapBlock is the swap configuration's Ignition version, files and
// units, and the whole KSM zero-pages configuration, as CEL literals.
func swapBlock(t *testing.T, config, ksmConfig map[string]interface{}) string {
	t.Helper()
	keys := func(m map[string]interface{}) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	// Anything else in spec.config would not be checked by the policy.
	want := map[string][]string{"": {"ignition", "storage", "systemd"}, "ignition": {"version"}, "storage": {"files"}, "systemd": {"units"}}
	if got := keys(config); !reflect.DeepEqual(got, want[""]) {
		t.Fatalf("the swap MachineConfig's spec.config has %v; the policy checks %v: extend its swap rule", got, want[""])
	}
	for _, k := range want[""] {
		if got := keys(config[k].(map[string]interface{})); !reflect.DeepEqual(got, want[k]) {
			t.Fatalf("the swap MachineConfig's spec.config.%s has %v; the policy checks %v: extend its swap rule", k, got, want[k])
		}
	}
	return block(swapStart, []namedValue{
		{"swapIgnitionVersion", config["ignition"].(map[string]interface{})["version"]},
		{"swapFiles", config["storage"].(map[string]interface{})["files"]},
		{"swapUnits", config["systemd"].(map[string]interface{})["units"]},
		{"ksmZeroPagesConfig", ksmConfig},
	})
}

// celLiteral writes a JSON-like value as a CEL literal. Aggregates of
// mixed types wrap their elements in dyn(): CEL rejects heterogeneous
// literals otherwise; so are the objects in a list. A list of scalars of
// one type stays typed (list(string) for join()).
func celLiteral(v interface{}, indent string) string {
	inner := indent + "  "
	switch x := v.(type) {
	case map[string]interface{}:
		var keys []string
		types := map[string]bool{}
		for k, e := range x {
			keys = append(keys, k)
			types[celType(e)] = true
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range keys {
			e := celLiteral(x[k], inner)
			if len(types) > 1 {
				e = "dyn(" + e + ")"
			}
			fmt.Fprintf(&b, "%s%s: %s,\n", inner, strconv.Quote(k), e)
		}
		return b.String() + indent + "}"
	case []interface{}:
		if t := celType(x); t != "list(dyn)" && !strings.HasPrefix(t, "list(map") && !strings.HasPrefix(t, "list(list") {
			var elems []string
			for _, e := range x {
				elems = append(elems, celLiteral(e, inner))
			}
			return "[" + strings.Join(elems, ", ") + "]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, e := range x {
			fmt.Fprintf(&b, "%sdyn(%s),\n", inner, celLiteral(e, inner))
		}
		return b.String() + indent + "]"
	case string:
		return strconv.Quote(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("no CEL literal for %T", v))
}

// celType is the CEL type of a literal of v; dyn where its parts differ.
func celType(v interface{}) string {
	common := func(types []string) string {
		if len(types) == 0 {
			return "dyn"
		}
		for _, t := range types[1:] {
			if t != types[0] {
				return "dyn"
			}
		}
		return types[0]
	}
	switch x := v.(type) {
	case map[string]interface{}:
		var types []string
		for _, e := range x {
			types = append(types, celType(e))
		}
		return "map(string, " + common(types) + ")"
	case []interface{}:
		var types []string
		for _, e := range x {
			types = append(types, celType(e))
		}
		return "list(" + common(types) + ")"
	case string:
		return "string"
	case int64, int:
		return "int"
	case bool:
		return "bool"
	}
	panic(fmt.Sprintf("no CEL type for %T", v))
}

// catalogueStart begins the constants the value rules compare with.
const catalogueStart = "  # GENERATED from the catalogue (pkg/apis/advisor/validation, pkg/profiles/*)"

// catalogueBlock: the values the profiles of the catalogue write where
// the policy confines values (MachineConfigs, the KubeletConfig), and the
// keys of the maps they write into objects written over, as they declare
// them (loadaware.Writes) and, for example-profile, as it writes them.
func catalogueBlock(t *testing.T) string {
	t.Helper()
	strs := func(s []string) []interface{} {
		out := make([]interface{}, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	kd := loadaware.Writes()
	fields, limits := map[string]interface{}{}, map[string]interface{}{}
	for k := range kd.DurationCustomizations {
		fields[k] = true
	}
	for k := range kd.Customizations {
		fields[k] = true
	}
	for k := range kd.EvictionLimits {
		limits[k] = true
	}
	confinedValueWriters(t)
	kc := kubeletConfigValues()
	var exampleData map[string]interface{}
	for _, it := range items(t, variant{name: "example-profile", profile: example.New()}, newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])) {
		exampleData = it.Desired.Object["data"].(map[string]interface{})
	}
	return block(catalogueStart, []namedValue{
		{"kdCustomizationFields", strs(sortedKeys(fields))},
		{"kdEvictionLimitFields", strs(sortedKeys(limits))},
		{"exampleData", exampleData},
		{"kcPinned", kc.pinned},
		{"kcFields", strs(kc.fields)},
		{"kcOneOf", kc.oneOf},
		{"kcPatterns", kc.patterns},
		{"kcReservedMemoryMiB", int64(dedicatedcpus.ReservedMemoryMiB)},
		{"kcNUMANodeMax", int64(dedicatedcpus.MaxNUMANode)},
	})
}

// valueRules are a resource's declared value rules (Write.Values), by
// kind of rule, each a map from the key under the field to its rule: the
// policy holds one template per kind.
type valueRules struct {
	fields                  []string
	pinned, oneOf, patterns map[string]interface{}
}

// kubeletConfigValues are the rules of the keys of kubeletConfig the
// profiles declare; reservedMemory's rule (a sum over NUMA nodes) is the
// policy's own.
func kubeletConfigValues() valueRules {
	r := valueRules{pinned: map[string]interface{}{}, oneOf: map[string]interface{}{}, patterns: map[string]interface{}{}}
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			if w.Resource.Resource != "kubeletconfigs" {
				continue
			}
			for _, v := range w.Values {
				key, _ := strings.CutPrefix(v.Path, "kubeletConfig.")
				r.fields = append(r.fields, key)
				switch {
				case v.OneOf != nil:
					r.oneOf[key] = stringsOf(v.OneOf)
				case v.Pattern != "":
					r.patterns[key] = v.Pattern
				default:
					r.pinned[key] = v.Pinned
				}
			}
		}
	}
	r.fields = append(r.fields, "reservedMemory")
	return r
}

// valueConfined are the resources whose values (not only fields) the
// policy confines, by the rules of each profile that writes them: a new
// profile that writes one needs its rule; one that writes only fields of
// objects written over (the HyperConverged) needs nothing here.
var valueConfined = map[string][]string{
	"machineconfiguration.openshift.io/machineconfigs": {"hugepages", "load-aware-rebalancing", "pci-passthrough", "virt-higher-density"},
	"machineconfiguration.openshift.io/kubeletconfigs": {dedicatedcpus.Name},
	configMapsRsrc: {"example-profile"},
}

// confinedValueWriters fails on a profile that writes a value-confined
// resource without a value rule of the policy.
func confinedValueWriters(t *testing.T) {
	t.Helper()
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			res := w.Resource.Group + "/" + w.Resource.Resource
			if known, confined := valueConfined[res]; confined && !contains(known, name) {
				t.Fatalf("profile %s writes %s, whose values the policy confines by each profile's rules: add its rule", name, res)
			}
		}
	}
}

// stringsOf is a list of strings as a CEL literal's value.
func stringsOf(s []string) []interface{} {
	out := make([]interface{}, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestPolicyPinsWhatTheCatalogueWrites: the constants of the value rules
// are the catalogue's (regenerated with -update), and evaluate to them.
func TestPolicyPinsWhatTheCatalogueWrites(t *testing.T) {
	generated := catalogueBlock(t)
	syncBlock(t, catalogueStart, generated)
	policy, _ := readPolicy(t)
	for name, want := range map[string]interface{}{
		"kdEvictionLimitFields": []interface{}{"node", "total"},
		"kcOneOf":               map[string]interface{}{"topologyManagerPolicy": []interface{}{"single-numa-node", "restricted", "best-effort"}},
	} {
		if got := literal(t, policy, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s evaluates to %#v, want %#v", name, got, want)
		}
	}
}

// sortedKeys: messages list a map's keys in a stable order.
func sortedKeys(m map[string]interface{}) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writesStart begins what the profiles' writes make of the policy's
// variables.
const writesStart = "  # GENERATED from the profiles' writes (profiles.Metadata.Writes)"

// Resources of writes that are not a profile's, or not in a spec.
const (
	poolsResource  = "machineconfiguration.openshift.io/machineconfigpools"
	hcoResource    = "hco.kubevirt.io/hyperconvergeds"
	configMapsRsrc = "/configmaps"
)

// writes is what the profiles of the catalogue declare they write, plus
// the controller's pause of a pool (spec.paused of any pool).
type writes struct {
	operations, objects, ownSpec map[string][]string
	// templates are the names with the pool's name in them (Write.Name
	// with profiles.PoolPlaceholder), as their prefix and suffix.
	templates map[string][]interface{}
	hcoFields []string
	// kernelArguments are the patterns of the kernel arguments each
	// MachineConfig may add, by its declared name (Write.KernelArguments).
	kernelArguments map[string]interface{}
}

func catalogueWrites() writes {
	w := writes{
		operations: map[string][]string{poolsResource: {"UPDATE"}},
		objects:    map[string][]string{},
		templates:  map[string][]interface{}{},
		ownSpec:    map[string][]string{poolsResource: {"paused"}},

		kernelArguments: map[string]interface{}{},
	}
	add := func(list []string, v ...string) []string {
		for _, s := range v {
			if !contains(list, s) {
				list = append(list, s)
			}
		}
		return list
	}
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, wr := range p.Metadata().Writes {
			res := wr.Resource.Group + "/" + wr.Resource.Resource
			ops := w.operations[res]
			if wr.Create {
				ops = add(ops, "CREATE")
			}
			ops = add(ops, "UPDATE")
			if wr.Delete {
				ops = add(ops, "DELETE")
			}
			w.operations[res] = ops
			if len(wr.KernelArguments) > 0 {
				w.kernelArguments[wr.Name] = stringsOf(wr.KernelArguments)
			}
			key := wr.Name
			if wr.Namespace != "" {
				key = wr.Namespace + "/" + key
			}
			if prefix, suffix, ok := strings.Cut(key, profiles.PoolPlaceholder); ok {
				w.templates[res] = append(w.templates[res], []interface{}{prefix, suffix})
			} else {
				w.objects[res] = add(w.objects[res], key)
			}
			switch {
			case res == configMapsRsrc:
				// A ConfigMap has no spec: the exampleData rule checks its data.
			case res == hcoResource:
				w.hcoFields = add(w.hcoFields, wr.Fields...)
			case wr.Create:
				// Objects a profile makes are managed by name.
				w.ownSpec[res+":"+wr.Name] = add(w.ownSpec[res+":"+wr.Name], wr.Fields...)
			default:
				w.ownSpec[res] = add(w.ownSpec[res], wr.Fields...)
			}
		}
	}
	if len(w.hcoFields) > 0 {
		// v1 holds them under spec.virtualization (pkg/kubevirt).
		w.ownSpec[hcoResource] = add(append([]string(nil), w.hcoFields...), kubevirt.HCOFieldPath(kubevirt.HCOVersionV1, "x")[1])
	}
	for res, ops := range w.operations {
		sort.Slice(ops, func(i, j int) bool { return opOrder[ops[i]] < opOrder[ops[j]] })
		w.operations[res] = ops
	}
	return w
}

var opOrder = map[string]int{"CREATE": 0, "UPDATE": 1, "DELETE": 2}

// writesBlock is the writes as CEL variables; hcoManaged names the
// HyperConverged's fields the items manage (in v1beta1's paths) for messages.
func writesBlock(t *testing.T) string {
	t.Helper()
	w := catalogueWrites()
	lists := func(m map[string][]string) map[string]interface{} {
		out := map[string]interface{}{}
		for k, v := range m {
			l := make([]interface{}, len(v))
			for i, s := range v {
				l[i] = s
			}
			out[k] = l
		}
		return out
	}
	strs := func(s []string) []interface{} {
		out := make([]interface{}, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	return block(writesStart, []namedValue{
		{"operations", lists(w.operations)},
		{"objects", lists(w.objects)},
		{"objectTemplates", templates(w.templates)},
		{"ownSpecByResource", lists(w.ownSpec)},
		{"hcoFields", strs(w.hcoFields)},
		{"kernelArgumentPatterns", w.kernelArguments},
		{"hcoManaged", strs(hcoManaged(t))},
		{"hcoConfined", hcoConfined(t)},
	})
}

// hcoManaged is the HyperConverged's fields the catalogue's items manage,
// in v1beta1's paths without "spec.", sorted: what the policy's messages
// name.
func hcoManaged(t *testing.T) []string {
	t.Helper()
	var managed []string
	for _, vr := range variants() {
		for _, it := range items(t, vr, newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])) {
			if it.Desired.GetKind() != kubevirt.HyperConvergedGVK.Kind {
				continue
			}
			for _, f := range it.ManagedFields {
				if f = strings.TrimPrefix(f, "spec."); !contains(managed, f) {
					managed = append(managed, f)
				}
			}
		}
	}
	sort.Strings(managed)
	return managed
}

// hcoConfined are the HyperConverged's settings of which the items manage
// some keys only (hcoManaged's dotted fields): the policy lets only those
// keys change; the other fields of hcoFields are managed whole.
func hcoConfined(t *testing.T) map[string]interface{} {
	t.Helper()
	out := map[string]interface{}{}
	for _, f := range hcoManaged(t) {
		if top, sub, ok := strings.Cut(f, "."); ok {
			l, _ := out[top].([]interface{})
			out[top] = append(l, sub)
		}
	}
	return out
}

// templates are the name templates as CEL values ({} when none).
func templates(m map[string][]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPolicyIsWhatTheProfilesWrite: the policy's objects, operations and
// fields are generated from the profiles' Writes (-update rewrites them).
func TestPolicyIsWhatTheProfilesWrite(t *testing.T) {
	syncBlock(t, writesStart, writesBlock(t))
}

// The server's RBAC: its write rules are generated from the profiles'
// Writes, in the ClusterRole and, for objects a profile creates in a
// namespace, a Role there (create cannot be restricted by name).
const (
	rbacFile      = "03-server-rbac.yaml"
	rbacStart     = "# GENERATED from the profiles' writes (profiles.Metadata.Writes)"
	rbacRoleStart = "# GENERATED Roles from the profiles' writes (profiles.Metadata.Writes)"
	rbacEnd       = "# END GENERATED"
)

func rbacBlocks() (clusterRules, roles string) {
	type rule struct {
		group, resource string
		names, why      []string
		verbs           []string
		create, anyName bool
	}
	var order []string
	rules := map[string]*rule{}
	byNamespace := map[string][]*rule{}
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			key := w.Resource.String()
			if w.Create && w.Namespace != "" {
				key = w.Namespace + "/" + key
			}
			anyPool := strings.Contains(w.Name, profiles.PoolPlaceholder)
			if anyPool {
				key = "~" + key // a rule of its own, after the named ones
			}
			r := rules[key]
			if r == nil {
				r = &rule{group: w.Resource.Group, resource: w.Resource.Resource, verbs: []string{"update", "patch"}, anyName: anyPool}
				rules[key] = r
				order = append(order, key)
				if w.Create && w.Namespace != "" {
					byNamespace[w.Namespace] = append(byNamespace[w.Namespace], r)
				}
			}
			if !contains(r.names, w.Name) {
				r.names = append(r.names, w.Name)
			}
			r.why = append(r.why, fmt.Sprintf("%s: %s (%s)", w.Name, w.Why, name))
			if w.Delete && !contains(r.verbs, "delete") {
				r.verbs = append(r.verbs, "delete")
			}
			r.create = r.create || w.Create
		}
	}
	sort.Strings(order)
	quoted := func(l []string) string {
		q := make([]string, len(l))
		for i, s := range l {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	writeRule := func(b *strings.Builder, r *rule) {
		for _, w := range r.why {
			fmt.Fprintf(b, "# %s\n", w)
		}
		if r.anyName {
			fmt.Fprintf(b, "# These names hold the name of a pool the options choose: RBAC cannot name\n# them, so the verbs are granted for the kind; the admission policy admits\n# only %s (any pool in place of %s, labelled with its role) and their\n# kernel arguments, and refuses any other MachineConfig.\n", strings.Join(r.names, ", "), profiles.PoolPlaceholder)
			fmt.Fprintf(b, "- apiGroups: [%q]\n  resources: [%q]\n  verbs: %s\n", r.group, r.resource, quoted(r.verbs))
			return
		}
		fmt.Fprintf(b, "- apiGroups: [%q]\n  resources: [%q]\n  resourceNames: %s\n  verbs: %s\n", r.group, r.resource, quoted(r.names), quoted(r.verbs))
	}
	var cb strings.Builder
	cb.WriteString(rbacStart + doNotEdit)
	createGranted := map[string]bool{}
	for _, key := range order {
		r := rules[key]
		if strings.Contains(key, "/") && !strings.HasPrefix(strings.TrimPrefix(key, "~"), r.resource) {
			continue // a Role's
		}
		writeRule(&cb, r)
		if r.create && !createGranted[r.group+"/"+r.resource] {
			createGranted[r.group+"/"+r.resource] = true
			fmt.Fprintf(&cb, "# create cannot be restricted by name: granted for the kind (the admission\n# policy refuses any other name and content).\n- apiGroups: [%q]\n  resources: [%q]\n  verbs: [\"create\"]\n", r.group, r.resource)
		}
	}
	cb.WriteString(readRules())
	var rb strings.Builder
	rb.WriteString(rbacRoleStart + doNotEdit)
	var namespaces []string
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		fmt.Fprintf(&rb, "---\n# The objects profiles create in %s: read, create (not restricted by name)\n# and update, patch (delete where they prune) by name, in this namespace only.\n", ns)
		fmt.Fprintf(&rb, "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: virt-advisor-apiserver-writes\n  namespace: %s\n  labels:\n    app.kubernetes.io/name: virt-advisor\n    app.kubernetes.io/component: apiserver\nrules:\n", ns)
		for _, r := range byNamespace[ns] {
			fmt.Fprintf(&rb, "- apiGroups: [%q]\n  resources: [%q]\n  verbs: [\"get\", \"list\", \"watch\", \"create\"]\n", r.group, r.resource)
			writeRule(&rb, r)
		}
		fmt.Fprintf(&rb, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: virt-advisor-apiserver-writes\n  namespace: %s\n  labels:\n    app.kubernetes.io/name: virt-advisor\n    app.kubernetes.io/component: apiserver\n", ns)
		rb.WriteString("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: virt-advisor-apiserver-writes\nsubjects:\n- kind: ServiceAccount\n  name: virt-advisor-apiserver\n  namespace: virt-advisor\n")
	}
	return cb.String(), rb.String()
}

// readRules grant get, list and watch of what the profiles write (to
// plan, dry-run and follow drift; a namespace's Role grants what they
// create there) and of what their items derive from (Metadata.Reads).
func readRules() string {
	var order []schema.GroupResource
	writers, whys := map[schema.GroupResource][]string{}, map[schema.GroupResource][]string{}
	add := func(m map[schema.GroupResource][]string, r schema.GroupResource, s string) {
		if _, ok := writers[r]; !ok {
			if _, ok := whys[r]; !ok {
				order = append(order, r)
			}
		}
		if !contains(m[r], s) {
			m[r] = append(m[r], s)
		}
	}
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			if !w.Create || w.Namespace == "" {
				add(writers, w.Resource, name)
			}
		}
		for _, r := range p.Metadata().Reads {
			add(whys, r.Resource, r.Why+" ("+name+")")
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].String() < order[j].String() })
	for _, r := range order {
		if len(writers[r]) > 0 {
			whys[r] = append([]string{"written by " + strings.Join(writers[r], ", ")}, whys[r]...)
		}
	}
	var b strings.Builder
	b.WriteString("# What the profiles read, from their declarations (profiles.Metadata.Writes\n# and Reads): what they write, to plan, dry-run and follow drift, and\n# what their items derive from; read only.\n")
	for _, r := range order {
		fmt.Fprintf(&b, "# %s: %s\n", r.Resource, strings.Join(whys[r], "; "))
		fmt.Fprintf(&b, "- apiGroups: [%q]\n  resources: [%q]\n  verbs: [\"get\", \"list\", \"watch\"]\n", r.Group, r.Resource)
	}
	return b.String()
}

// TestRBACIsWhatTheProfilesWrite: the server's rights to write are
// generated from the profiles' Writes (-update rewrites them).
func TestRBACIsWhatTheProfilesWrite(t *testing.T) {
	cluster, roles := rbacBlocks()
	syncFileBlock(t, rbacFile, rbacStart, rbacEnd, cluster)
	syncFileBlock(t, rbacFile, rbacRoleStart, rbacEnd, roles)
}
