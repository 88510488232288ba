package deploy

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
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
// literals otherwise.
func celLiteral(v interface{}, indent string) string {
	inner := indent + "  "
	switch x := v.(type) {
	case map[string]interface{}:
		var keys []string
		kinds := map[string]bool{}
		for k, e := range x {
			keys = append(keys, k)
			kinds[fmt.Sprintf("%T", e)] = true
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range keys {
			e := celLiteral(x[k], inner)
			if len(kinds) > 1 {
				e = "dyn(" + e + ")"
			}
			fmt.Fprintf(&b, "%s%s: %s,\n", inner, strconv.Quote(k), e)
		}
		return b.String() + indent + "}"
	case []interface{}:
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
