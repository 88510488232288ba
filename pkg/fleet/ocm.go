package fleet

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The Open Cluster Management resources a fleet's hub reads and writes.
var (
	ManifestWorkReplicaSetGVR = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1alpha1", Resource: "manifestworkreplicasets"}
	ManifestWorkGVR           = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	PlacementDecisionGVR      = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placementdecisions"}
)

// Labels OCM sets: a PlacementDecision's Placement and decision group,
// a ManifestWork's ManifestWorkReplicaSet.
const (
	PlacementLabel          = "cluster.open-cluster-management.io/placement"
	DecisionGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index"
	DecisionGroupNameLabel  = "cluster.open-cluster-management.io/decision-group-name"
	ReplicaSetLabel         = "work.open-cluster-management.io/manifestworkreplicaset"
)

// ReplicaSetKey is the value of ReplicaSetLabel on the ManifestWorks of
// fc's ManifestWorkReplicaSet.
func ReplicaSetKey(fc *v1alpha1.FleetConfig) string { return fc.Namespace + "." + fc.Name }

// conditionRules map a cluster's config onto OCM's rollout, for the
// approval of fleet hash H: Progressing until the config says it
// completed H's plan (OCM counts a cluster Succeeded once Progressing is
// False), Degraded when it says H's plan failed, was aborted, its rollout
// halted, or H approves nothing there (OCM counts a cluster Failed when
// both are True, and maxFailures stops the rollout). Only a status that
// names H (status.delegatedFleetHash) counts: the work agent may read the
// config from a cache that has not seen H yet, and a status written
// before H arrived says nothing of H. The expressions guard every field
// they read: an expression that fails reads as False, which for
// Progressing would read as Succeeded.
func conditionRules(fleetHash string) (progressing, degraded string) {
	if fleetHash == "" {
		// The review: every cluster gets the spec at once (All); there is
		// no outcome to wait for.
		return "false", "false"
	}
	answers := fmt.Sprintf(`has(object.status) && has(object.status.delegatedFleetHash) && object.status.delegatedFleetHash == '%s' && has(object.status.phase)`, fleetHash)
	progressing = fmt.Sprintf(`!(%s && object.status.phase == 'Completed')`, answers)
	degraded = answers + ` && (object.status.phase in ['Failed', 'Aborted', 'CompletedWithErrors', 'PrerequisiteFailed'] || ` +
		`(has(object.status.conditions) && object.status.conditions.exists(c, c.status == 'True' && ` +
		`((c.type == 'ReviewRequired' && c.reason in ['DelegatedApprovalMismatch', 'DelegatedApprovalUsed', 'FleetAborted', 'ClusterNameUnset']) || (c.type == 'Waiting' && c.reason == 'RolloutHalted')))))`
	return progressing, degraded
}

// phaseMessage is the phase and its condition's message.
const phaseMessage = `has(object.status) && has(object.status.phase) && has(object.status.conditions) ? ` +
	`object.status.phase + ': ' + object.status.conditions.filter(c, c.type == object.status.phase).map(c, c.message).join('; ') : 'no status yet'`

// feedback are the fields of a cluster's config its ManifestWork reports:
// scalars each (a JSON value is at most 1024 bytes there).
var feedback = []struct{ name, path string }{
	{"phase", ".status.phase"},
	{"planHash", ".status.plan.planHash"},
	{"specHash", ".status.plan.specHash"},
	{"items", ".status.plan.items"},
	{"nodeReboots", ".status.plan.nodeReboots"},
	{"liveMigrations", ".status.plan.liveMigrations"},
	{"shutDownVMs", ".status.plan.shutDownVMs"},
	{"drainBlockingVMs", ".status.plan.drainBlockingVMs"},
	{"capacity", ".status.plan.capacity"},
}

// SpokeFieldManager is the manager of what the work agent applies on a
// cluster (OCM requires the prefix work-agent).
const SpokeFieldManager = "work-agent-virt-advisor"

// ReplicaSet is the ManifestWorkReplicaSet of fc: its ManifestWork
// carries spoke, the config every cluster gets, and rolls out by
// strategy. Its name and namespace are fc's.
func ReplicaSet(fc *v1alpha1.FleetConfig, spoke *v1alpha1.VirtPlatformConfig, strategy v1alpha1.RolloutStrategy) (*unstructured.Unstructured, error) {
	manifest, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spoke)
	if err != nil {
		return nil, err
	}
	delete(manifest, "status")
	unstructured.RemoveNestedField(manifest, "metadata", "creationTimestamp")
	rollout, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&strategy)
	if err != nil {
		return nil, err
	}
	var paths []any
	for _, f := range feedback {
		paths = append(paths, map[string]any{"name": f.name, "path": f.path})
	}
	rule := func(condition, expression string) map[string]any {
		return map[string]any{"condition": condition, "type": "CEL", "celExpressions": []any{expression}, "messageExpression": phaseMessage}
	}
	var fleetHash string
	if d := spoke.Spec.DelegatedApproval; d != nil {
		fleetHash = d.FleetHash
	}
	progressingRule, degradedRule := conditionRules(fleetHash)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.open-cluster-management.io/v1alpha1",
		"kind":       "ManifestWorkReplicaSet",
		"metadata":   map[string]any{"name": fc.Name, "namespace": fc.Namespace},
		"spec": map[string]any{
			"placementRefs": []any{map[string]any{"name": fc.Spec.PlacementRef.Name, "rolloutStrategy": rollout}},
			"manifestWorkTemplate": map[string]any{
				"workload": map[string]any{"manifests": []any{manifest}},
				"manifestConfigs": []any{map[string]any{
					"resourceIdentifier": map[string]any{"group": v1alpha1.SchemeGroupVersion.Group, "resource": "virtplatformconfigs", "name": spoke.Name},
					"feedbackRules":      []any{map[string]any{"type": "JSONPaths", "jsonPaths": paths}},
					"conditionRules":     []any{rule("Progressing", progressingRule), rule("Degraded", degradedRule)},
					"updateStrategy":     map[string]any{"type": "ServerSideApply", "serverSideApply": map[string]any{"force": true, "fieldManager": SpokeFieldManager}},
				}},
			},
		},
	}}, nil
}

// Decisions reads the clusters and decision groups of a Placement's
// PlacementDecisions.
func Decisions(decisions []unstructured.Unstructured) []Decision {
	var out []Decision
	for i := range decisions {
		d := &decisions[i]
		index, _ := strconv.ParseInt(d.GetLabels()[DecisionGroupIndexLabel], 10, 32)
		list, _, _ := unstructured.NestedSlice(d.Object, "status", "decisions")
		for _, e := range list {
			m, _ := e.(map[string]any)
			if name, _ := m["clusterName"].(string); name != "" {
				out = append(out, Decision{Cluster: name, Group: d.GetLabels()[DecisionGroupNameLabel], GroupIndex: int32(index)})
			}
		}
	}
	return out
}

// ReportOf reads what a cluster's ManifestWork says of its config.
func ReportOf(work *unstructured.Unstructured) Report {
	r := Report{Rollout: RolloutOf(work)}
	if m, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests"); len(m) > 0 {
		if cfg, ok := m[0].(map[string]any); ok {
			r.Approved, _, _ = unstructured.NestedString(cfg, "spec", "delegatedApproval", "fleetHash")
		}
	}
	manifests, _, _ := unstructured.NestedSlice(work.Object, "status", "resourceStatus", "manifests")
	if len(manifests) == 0 {
		return r
	}
	manifest, _ := manifests[0].(map[string]any)
	values, _, _ := unstructured.NestedSlice(manifest, "statusFeedback", "values")
	got := map[string]map[string]any{}
	for _, v := range values {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		fv, _ := m["fieldValue"].(map[string]any)
		got[name] = fv
	}
	str := func(name string) string { s, _ := got[name]["string"].(string); return s }
	num := func(name string) int64 {
		n, _ := got[name]["integer"].(int64)
		return n
	}
	r.Phase = str("phase")
	if conditions, _, _ := unstructured.NestedSlice(manifest, "conditions"); conditions != nil {
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["type"] == "Progressing" {
				r.Message, _ = m["message"].(string)
			}
		}
	}
	// The rules' message starts with the phase, for OCM's own view.
	r.Message = strings.TrimPrefix(r.Message, r.Phase+": ")
	if planHash, specHash := str("planHash"), str("specHash"); planHash != "" && specHash != "" {
		p := &v1alpha1.PlanSummary{PlanHash: planHash, SpecHash: specHash, NodeReboots: num("nodeReboots"), LiveMigrations: num("liveMigrations"),
			ShutDownVMs: num("shutDownVMs"), DrainBlockingVMs: num("drainBlockingVMs"), Capacity: str("capacity")}
		if raw, _ := got["items"]["jsonRaw"].(string); raw != "" {
			_ = json.Unmarshal([]byte(raw), &p.Items) // items are shown, not hashed: the plan hash binds them
		}
		r.Plan = p
	}
	return r
}

// Rollout states of a cluster, as OCM's ManifestWorkReplicaSet
// controller decides them from its ManifestWork.
const (
	RolloutToApply     = "ToApply"
	RolloutProgressing = "Progressing"
	RolloutSucceeded   = "Succeeded"
	RolloutFailed      = "Failed"
)

// RolloutOf is the rollout state of a ManifestWork as OCM's
// ManifestWorkReplicaSet controller decides it: ToApply until applied at
// its generation with a Progressing condition of that generation;
// Failed when Progressing and Degraded; Succeeded when not Progressing.
func RolloutOf(work *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(work.Object, "status", "conditions")
	get := func(t string) *metav1.Condition {
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["type"] != t {
				continue
			}
			var cond metav1.Condition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond); err != nil {
				return nil
			}
			return &cond
		}
		return nil
	}
	gen := work.GetGeneration()
	applied, progressing, degraded := get("Applied"), get("Progressing"), get("Degraded")
	switch {
	case applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != gen,
		progressing == nil || progressing.ObservedGeneration != gen,
		degraded != nil && degraded.ObservedGeneration != gen:
		return RolloutToApply
	case progressing.Status == metav1.ConditionTrue && degraded != nil && degraded.Status == metav1.ConditionTrue:
		return RolloutFailed
	case progressing.Status == metav1.ConditionFalse:
		return RolloutSucceeded
	}
	return RolloutProgressing
}

// describe names a cluster's report for messages.
func describe(name string, r Report) string {
	if r.Message != "" {
		return fmt.Sprintf("%s (%s)", name, r.Message)
	}
	return fmt.Sprintf("%s (phase %q)", name, r.Phase)
}
