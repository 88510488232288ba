package disruption

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The node disruption action types of MachineConfiguration
// status.nodeDisruptionPolicyStatus.clusterPolicies (openshift/api
// operator/v1 NodeDisruptionPolicyStatusActionType). Special is reserved
// for /etc/containers/registries.conf: the daemon drains unless it finds
// the change safe (pkg/daemon/drain.go), so it counts as a Drain here.
const specialAction = "Special"

// rank orders actions by what they do to a node: the strongest one of a
// change is what the node goes through.
var rank = map[v1alpha1.NodeDisruption]int{
	v1alpha1.NodeDisruptionNone:         0,
	v1alpha1.NodeDisruptionDaemonReload: 1,
	v1alpha1.NodeDisruptionReload:       2,
	v1alpha1.NodeDisruptionRestart:      3,
	v1alpha1.NodeDisruptionDrain:        4,
	v1alpha1.NodeDisruptionReboot:       5,
}

// Stronger is the action that disrupts a node more.
func Stronger(a, b v1alpha1.NodeDisruption) v1alpha1.NodeDisruption {
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Drains is true for the actions before which the Machine Config Daemon
// drains the node: Reboot and Drain (pkg/daemon/drain.go,
// isDrainRequiredForNodeDisruptionActions).
func Drains(a v1alpha1.NodeDisruption) bool {
	return a == v1alpha1.NodeDisruptionReboot || a == v1alpha1.NodeDisruptionDrain
}

// PolicyAction is one action of a node disruption policy.
type PolicyAction struct {
	Type    v1alpha1.NodeDisruption
	Service string // the service a Reload or Restart acts on
	Special bool   // the registries.conf action, counted as a Drain
}

func (a PolicyAction) String() string {
	switch {
	case a.Special:
		return specialAction
	case a.Service != "":
		return string(a.Type) + " " + a.Service
	}
	return string(a.Type)
}

// Policies are the node disruption policies of the cluster: the defaults
// merged with the administrator's entries, as the MachineConfiguration
// cluster's status holds them.
type Policies struct {
	Files  []FilePolicy
	Units  map[string][]PolicyAction
	SSHKey []PolicyAction
}

// FilePolicy is the policy of a path: the file itself or, for a
// directory, every file below it.
type FilePolicy struct {
	Path    string
	Actions []PolicyAction
}

// ReadPolicies reads status.nodeDisruptionPolicyStatus.clusterPolicies of
// the MachineConfiguration cluster. It returns nil and why when the cluster
// offers none to go by: then every file or unit change reboots, as it does
// on a cluster without node disruption policies. The daemon uses the status
// only once it is current (status.observedGeneration = metadata.generation);
// until then the plan does not trust it either.
func ReadPolicies(mc *unstructured.Unstructured) (*Policies, string) {
	if mc == nil {
		return nil, "there is no MachineConfiguration 'cluster'"
	}
	observed, _, _ := unstructured.NestedInt64(mc.Object, "status", "observedGeneration")
	if observed != mc.GetGeneration() {
		return nil, fmt.Sprintf("MachineConfiguration 'cluster' status is not current (observedGeneration %d, generation %d)", observed, mc.GetGeneration())
	}
	cp, found, _ := unstructured.NestedMap(mc.Object, "status", "nodeDisruptionPolicyStatus", "clusterPolicies")
	if !found {
		return nil, "MachineConfiguration 'cluster' has no status.nodeDisruptionPolicyStatus.clusterPolicies"
	}
	p := &Policies{Units: map[string][]PolicyAction{}}
	files, _, _ := unstructured.NestedSlice(cp, "files")
	for _, f := range files {
		m, ok := f.(map[string]interface{})
		if !ok {
			continue
		}
		path, _ := m["path"].(string)
		p.Files = append(p.Files, FilePolicy{Path: path, Actions: readActions(m["actions"])})
	}
	units, _, _ := unstructured.NestedSlice(cp, "units")
	for _, u := range units {
		m, ok := u.(map[string]interface{})
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		p.Units[name] = readActions(m["actions"])
	}
	ssh, _, _ := unstructured.NestedFieldNoCopy(cp, "sshkey", "actions")
	p.SSHKey = readActions(ssh)
	return p, ""
}

func readActions(v interface{}) []PolicyAction {
	list, _ := v.([]interface{})
	out := make([]PolicyAction, 0, len(list))
	for _, a := range list {
		m, ok := a.(map[string]interface{})
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		pa := PolicyAction{Type: v1alpha1.NodeDisruption(typ)}
		if typ == specialAction {
			pa = PolicyAction{Type: v1alpha1.NodeDisruptionDrain, Special: true}
		}
		for _, key := range []string{"reload", "restart"} {
			if s, ok := m[key].(map[string]interface{}); ok {
				pa.Service, _ = s["serviceName"].(string)
			}
		}
		if _, known := rank[pa.Type]; !known {
			// An action this build does not know: assume the worst.
			pa = PolicyAction{Type: v1alpha1.NodeDisruptionReboot}
		}
		out = append(out, pa)
	}
	return out
}

// fileActions finds the policy of a changed file: the policy whose path
// is the file or its closest directory above it
// (pkg/controller/common/helpers.go, FindClosestFilePolicyPathMatch).
func (p *Policies) fileActions(path string) ([]PolicyAction, bool) {
	best, found := -1, false
	var actions []PolicyAction
	for _, fp := range p.Files {
		dir := filepath.Clean(fp.Path) + string(filepath.Separator)
		if path == fp.Path || strings.HasPrefix(filepath.Clean(path), dir) {
			if len(fp.Path) > best {
				best, found, actions = len(fp.Path), true, fp.Actions
			}
		}
	}
	return actions, found
}

// Decision is what each node of a pool goes through for a change, and why.
type Decision struct {
	Action v1alpha1.NodeDisruption
	Reason string
}

// rebootFields of a MachineConfig spec always reboot the node when they
// change (pkg/daemon/update.go: osUpdate, kargs, fips, kernelType,
// extensions), whatever the node disruption policies say.
var rebootFields = []string{"osImageURL", "kernelArguments", "extensions", "kernelType", "fips"}

// Decide says what a MachineConfig change does to each node of the pools
// that render it, from the spec before (nil: the MachineConfig is
// created) and after (nil: it is deleted), and the cluster's node
// disruption policies (nil: none, why says why: every file or unit change
// reboots). As in the daemon, a file or unit without a policy reboots,
// any Reboot wins, and otherwise the strongest action of the changed
// files, units and SSH keys is what the node goes through.
func Decide(before, after map[string]interface{}, policies *Policies, why string) Decision {
	var reboots []string
	for _, f := range rebootFields {
		if !sameValue(before[f], after[f], f == "kernelType") {
			reboots = append(reboots, f)
		}
	}
	if len(reboots) > 0 {
		return Decision{Action: v1alpha1.NodeDisruptionReboot, Reason: strings.Join(reboots, ", ") + " changed: always a reboot"}
	}
	files := changedEntries(configList(before, "storage", "files"), configList(after, "storage", "files"), "path")
	units := changedEntries(configList(before, "systemd", "units"), configList(after, "systemd", "units"), "name")
	ssh := !reflect.DeepEqual(normal(configList(before, "passwd", "users")), normal(configList(after, "passwd", "users")))
	if len(files) == 0 && len(units) == 0 && !ssh {
		return Decision{Action: v1alpha1.NodeDisruptionNone, Reason: "no file, unit or SSH key changes"}
	}
	if policies == nil {
		if len(files) == 0 && len(units) == 0 {
			// Without policies an SSH key change alone is applied in place.
			return Decision{Action: v1alpha1.NodeDisruptionNone, Reason: "only SSH keys change"}
		}
		return Decision{Action: v1alpha1.NodeDisruptionReboot, Reason: "files or units change and " + why + ": a reboot"}
	}
	return decideByPolicies(files, units, ssh, policies)
}

// decideByPolicies is Decide for changed files, units and SSH keys under
// node disruption policies: a file or unit no policy covers reboots,
// otherwise the strongest of their actions.
func decideByPolicies(files, units []string, ssh bool, policies *Policies) Decision {
	d := policyDecision{action: v1alpha1.NodeDisruptionNone, byAction: map[string][]string{}}
	for _, f := range files {
		actions, found := policies.fileActions(f)
		if !found {
			return Decision{Action: v1alpha1.NodeDisruptionReboot, Reason: fmt.Sprintf("file %s changes and no node disruption policy covers it: a reboot", f)}
		}
		d.note(f, actions)
	}
	for _, u := range units {
		actions, found := policies.Units[u]
		if !found {
			return Decision{Action: v1alpha1.NodeDisruptionReboot, Reason: fmt.Sprintf("unit %s changes and no node disruption policy covers it: a reboot", u)}
		}
		d.note(u, actions)
	}
	if ssh {
		d.note("SSH keys", policies.SSHKey)
	}
	return d.decision()
}

// policyDecision gathers the actions of the policies that cover the
// changes: the strongest, and what changes each list of actions is for.
type policyDecision struct {
	action   v1alpha1.NodeDisruption
	byAction map[string][]string
}

// note records that a change of what is covered by actions.
func (d *policyDecision) note(what string, actions []PolicyAction) {
	var names []string
	for _, a := range actions {
		d.action = Stronger(d.action, a.Type)
		names = append(names, a.String())
	}
	if len(names) == 0 {
		names = []string{string(v1alpha1.NodeDisruptionNone)}
	}
	key := strings.Join(names, ", ")
	d.byAction[key] = append(d.byAction[key], what)
}

func (d *policyDecision) decision() Decision {
	keys := make([]string, 0, len(d.byAction))
	for k := range d.byAction {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s for %s", k, strings.Join(d.byAction[k], ", "))
	}
	return Decision{Action: d.action, Reason: "node disruption policies: " + strings.Join(parts, "; ")}
}

// configList is a list under spec.config (Ignition): storage.files,
// systemd.units or passwd.users.
func configList(spec map[string]interface{}, path ...string) []interface{} {
	if spec == nil {
		return nil
	}
	l, _, _ := unstructured.NestedSlice(spec, append([]string{"config"}, path...)...)
	return l
}

// changedEntries names the entries (by key) added, removed or changed
// between two Ignition lists, sorted.
func changedEntries(before, after []interface{}, key string) []string {
	index := func(list []interface{}) map[string]interface{} {
		out := map[string]interface{}{}
		for _, e := range list {
			if m, ok := e.(map[string]interface{}); ok {
				if k, _ := m[key].(string); k != "" {
					out[k] = m
				}
			}
		}
		return out
	}
	b, a := index(before), index(after)
	var out []string
	for k, v := range a {
		if old, ok := b[k]; !ok || !reflect.DeepEqual(normal(old), normal(v)) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// sameValue compares two spec values, an unset one equal to its zero
// value ("", false, []) and, for the kernel type, "default" to unset.
func sameValue(a, b interface{}, kernelType bool) bool {
	a, b = normal(a), normal(b)
	if kernelType {
		if a == "default" {
			a = nil
		}
		if b == "default" {
			b = nil
		}
	}
	return reflect.DeepEqual(a, b)
}

// normal turns zero values into nil and numbers into float64, so that
// values read from JSON and built in Go compare alike.
func normal(v interface{}) interface{} {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case []interface{}:
		return normalList(x)
	case map[string]interface{}:
		return normalMap(x)
	}
	return v
}

// normalList is normal of a list: nil when empty, its elements normal.
func normalList(x []interface{}) interface{} {
	if len(x) == 0 {
		return nil
	}
	out := make([]interface{}, len(x))
	for i := range x {
		out[i] = normal(x[i])
	}
	return out
}

// normalMap is normal of a map: its values normal, the nil ones left
// out; nil when none is left.
func normalMap(x map[string]interface{}) interface{} {
	out := make(map[string]interface{}, len(x))
	for k, e := range x {
		if n := normal(e); n != nil {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
