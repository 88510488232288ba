package deploy

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
	"github.com/kubevirt/virt-advisor/pkg/profiles/higherdensity"
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
	raw, err := os.ReadFile(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	from := strings.Index(string(raw), start)
	to := -1
	if from >= 0 {
		to = strings.Index(string(raw[from:]), generatedEnd)
	}
	if from < 0 || to < 0 {
		t.Fatalf("%s: no %q ... %q block", policyFile, start, generatedEnd)
	}
	to += from
	if string(raw[from:to]) == generated {
		return false
	}
	if !*update {
		t.Fatalf("%s: the block %q is not what the profiles write: run `go test ./artifacts/deploy -update`\nit holds\n%s\nthe profiles make\n%s",
			policyFile, strings.TrimSpace(start), raw[from:to], generated)
	}
	out := string(raw[:from]) + generated + string(raw[to:])
	if err := os.WriteFile(policyFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %q into %s", strings.TrimSpace(start), policyFile)
	return true
}

// swapBlock is the swap configuration's Ignition version, files and
// units as CEL literals.
func swapBlock(t *testing.T, config map[string]interface{}) string {
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

// catalogueBlock: the values the profiles of the catalogue write, as
// they declare them (loadaware.Writes, higherdensity.Writes) and, for
// example-profile, as it writes them.
func catalogueBlock(t *testing.T) string {
	t.Helper()
	strs := func(s []string) []interface{} {
		out := make([]interface{}, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	bounds := func(r validation.Range) []interface{} { return []interface{}{int64(r.Min), int64(r.Max)} }
	kd := loadaware.Writes()
	custom := map[string]interface{}{}
	for k, vs := range kd.Customizations {
		custom[k] = vs
	}
	limits := map[string]interface{}{}
	for k, r := range kd.EvictionLimits {
		limits[k] = bounds(r)
	}
	if len(catalog.Default().Names()) != 3 {
		t.Fatalf("the catalogue has profiles %v; the policy's value rules know load-aware-rebalancing, virt-higher-density and example-profile: extend them", catalog.Default().Names())
	}
	var exampleData map[string]interface{}
	for _, it := range items(t, variant{"example-profile", example.New(), v1alpha1.ProfileOptions{}}, newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])) {
		exampleData = it.Desired.Object["data"].(map[string]interface{})
	}
	return block(catalogueStart, []namedValue{
		{"kdManagementStates", strs(kd.ManagementStates)},
		{"kdModes", strs(kd.Modes)},
		{"kdIntervalSeconds", bounds(kd.IntervalSeconds)},
		{"kdSelectedProfiles", strs(kd.Selected)},
		{"kdKeptProfiles", strs(kd.Kept)},
		{"kdCustomizations", custom},
		{"kdCustomizationFields", strs(sortedKeys(custom))},
		{"kdEvictionLimits", limits},
		{"kdEvictionLimitFields", strs(sortedKeys(limits))},
		{"hcoOvercommitPercentage", bounds(higherdensity.Writes())},
		{"exampleData", exampleData},
	})
}

// TestPolicyPinsWhatTheCatalogueWrites: the constants of the value rules
// are the catalogue's (regenerated with -update), and evaluate to them.
func TestPolicyPinsWhatTheCatalogueWrites(t *testing.T) {
	generated := catalogueBlock(t)
	syncBlock(t, catalogueStart, generated)
	policy, _ := readPolicy(t)
	kd := loadaware.Writes()
	for name, want := range map[string]interface{}{
		"kdModes":                 []interface{}{"Automatic", "Predictive"},
		"kdIntervalSeconds":       []interface{}{int64(kd.IntervalSeconds.Min), int64(kd.IntervalSeconds.Max)},
		"hcoOvercommitPercentage": []interface{}{int64(higherdensity.Writes().Min), int64(higherdensity.Writes().Max)},
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
