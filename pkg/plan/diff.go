package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const devNull = "/dev/null"

// sanitize drops what changes on every write or is not ours to compare, so
// that the diff shows configuration only.
func sanitize(obj *unstructured.Unstructured) map[string]interface{} {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy().Object
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]interface{}); ok {
		for _, f := range []string{"managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink"} {
			delete(md, f)
		}
	}
	return out
}

// toYAML renders an object with sorted keys; nil renders as nothing.
func toYAML(obj map[string]interface{}) (string, error) {
	if obj == nil {
		return "", nil
	}
	// What yaml.Marshal does, with the YAML kept by the JSON it is made of.
	j, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	if y, ok := rendered.get(j); ok {
		return y, nil
	}
	b, err := yaml.JSONToYAML(j)
	if err != nil {
		return "", err
	}
	rendered.put(j, string(b))
	return string(b), nil
}

// rendered keeps the YAML of the objects plans rendered lately, by their
// JSON: every plan renders its live and desired objects, mostly the same
// ones as the plan before, and making YAML of them costs several times
// what making their JSON does.
var rendered = yamlMemo{max: 64}

type yamlMemo struct {
	mu     sync.Mutex
	max    int
	byJSON map[string]string
}

func (m *yamlMemo) get(j []byte) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	y, ok := m.byJSON[string(j)]
	return y, ok
}

// put keeps y for j; a full memo starts again empty.
func (m *yamlMemo) put(j []byte, y string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byJSON == nil || len(m.byJSON) >= m.max {
		m.byJSON = make(map[string]string, m.max)
	}
	m.byJSON[string(j)] = y
}

// unifiedDiff diffs two rendered objects with 3 lines of context, labelled
// "<name> (<Kind>)" or /dev/null, as the earlier operator did.
func unifiedDiff(from, to, fromLabel, toLabel string) (string, error) {
	if from == to {
		return fmt.Sprintf("--- %s\n+++ %s\n(no changes)\n", fromLabel, toLabel), nil
	}
	var a, b []string
	if from != "" {
		a = difflib.SplitLines(from)
	}
	if to != "" {
		b = difflib.SplitLines(to)
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: a, B: b, FromFile: fromLabel, ToFile: toLabel, Context: 3,
	})
	// The context line of the empty last line is a lone space: trailing
	// white space would make kubectl print the diff as a quoted string
	// instead of a readable block.
	return strings.ReplaceAll(diff, "\n \n", "\n\n"), err
}

// changeCounts counts added and removed lines of a unified diff; the empty
// last line that difflib.SplitLines adds is not a change.
func changeCounts(diff string) (added, removed int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), l == "+", l == "-":
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	return added, removed
}

// ChangeSummary renders "+N -M" for the CHANGES column of the plan table.
func ChangeSummary(diff string) string {
	a, r := changeCounts(diff)
	return fmt.Sprintf("+%d -%d", a, r)
}
