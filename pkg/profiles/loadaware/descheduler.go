package loadaware

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Descheduler profiles in order of preference.
const (
	profileKubeVirt    = "KubeVirtRelieveAndMigrate"
	profileDevKubeVirt = "DevKubeVirtRelieveAndMigrate"
	profileLongLife    = "LongLifecycle"
)

var (
	preferredProfiles = []string{profileKubeVirt, profileDevKubeVirt, profileLongLife}
	// keptProfiles survive our change, in their existing order.
	keptProfiles = []string{"AffinityAndTaints", "SoftTopologyAndDuplicates"}
	// symmetricTwin is the fallback of a threshold an older operator lacks.
	symmetricTwin = map[string]string{"AsymmetricLow": "Low", "AsymmetricMedium": "Medium", "AsymmetricHigh": "High"}
)

// Fields of the KubeDescheduler's spec.profileCustomizations the profile sets.
const (
	customEvictionsInBackground = "devEnableEvictionsInBackground"
	customSoftTainter           = "devEnableSoftTainter"
	customDeviationThresholds   = "devDeviationThresholds"
	customMigrationCooldown     = "devMigrationCooldown"
	customMaxMigrationCooldown  = "devMaxMigrationCooldown"
	customMigrationHistory      = "devMigrationHistoryWindow"
)

// managementState is the only one the profile sets.
const managementState = "Managed"

// DeschedulerValues are the values the profile writes into the
// KubeDescheduler's spec, over every configuration the options allow and
// every operator level.
type DeschedulerValues struct {
	ManagementStates []string
	Modes            []string
	IntervalSeconds  validation.Range
	// Profiles: the last one is one of Selected; before it come only
	// Kept ones the KubeDescheduler already had.
	Selected, Kept []string
	// Customizations: the values of each field of profileCustomizations.
	Customizations map[string][]interface{}
	// DurationCustomizations: the range of each duration field of
	// profileCustomizations (written as Go durations, e.g. "30m0s").
	DurationCustomizations map[string]validation.DurationRange
	// EvictionLimits: the range of each field of evictionLimits.
	EvictionLimits map[string]validation.Range
}

// Writes is what the profile can write to the KubeDescheduler:
// TestItemsStayWithinWrites checks the items against it, and the
// admission policy of artifacts/deploy is generated from the keys of its
// maps (not from its values: a revert writes back an administrator's
// earlier ones, docs/security.md).
func Writes() DeschedulerValues {
	return DeschedulerValues{
		ManagementStates: []string{managementState},
		Modes:            slices.Clone(validation.DescheduleModes),
		IntervalSeconds:  validation.DeschedulingIntervalSeconds,
		Selected:         slices.Clone(preferredProfiles),
		Kept:             slices.Clone(keptProfiles),
		Customizations: map[string][]interface{}{
			customEvictionsInBackground: {true},
			customSoftTainter:           {true},
			// Its symmetric fallbacks are levels too.
			customDeviationThresholds: toInterfaces(validation.DeviationLevels),
		},
		DurationCustomizations: map[string]validation.DurationRange{
			customMigrationCooldown:    validation.MigrationCooldown,
			customMaxMigrationCooldown: validation.MaxMigrationCooldown,
			customMigrationHistory:     validation.MigrationHistoryWindow,
		},
		EvictionLimits: map[string]validation.Range{"total": validation.EvictionLimitTotal, "node": validation.EvictionLimitNode},
	}
}

func toInterfaces(s []string) []interface{} {
	out := make([]interface{}, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Default HCO live migration limits (its CRD defaults).
const (
	defaultParallelMigrationsPerCluster      = 5
	defaultParallelOutboundMigrationsPerNode = 2
)

// ScaleMigrationLimit turns an HCO migration limit into an eviction limit:
// evictions start migrations, so above 10 only 80% of the extra is used.
func ScaleMigrationLimit(v int64) int64 {
	if v < 10 {
		return v
	}
	return 10 + ((v - 10) * 4 / 5)
}

// EvictionLimits are the limits sent to the descheduler and where they came from.
type EvictionLimits struct {
	Total, Node int64
	// FromHCO is true when either limit was derived from the HyperConverged CR.
	FromHCO bool
}

// evictionLimits uses the user's limits as given, else the HCO's migration
// limits, scaled (hco nil: the HCO defaults).
func evictionLimits(hco *unstructured.Unstructured, la *v1alpha1.LoadAwareConfig) EvictionLimits {
	if la.EvictionLimitTotal != nil && la.EvictionLimitNode != nil {
		return EvictionLimits{Total: int64(*la.EvictionLimitTotal), Node: int64(*la.EvictionLimitNode)}
	}
	perCluster, perNode := int64(defaultParallelMigrationsPerCluster), int64(defaultParallelOutboundMigrationsPerNode)
	if hco != nil {
		// v1 moved the limits under spec.virtualization, with 5/1 defaults.
		version := kubevirt.VersionOf(hco)
		perCluster, perNode = kubevirt.HCOMigrationDefaults(version)
		if v, ok, _ := unstructured.NestedInt64(hco.Object, kubevirt.HCOFieldPath(version, "liveMigrationConfig", "parallelMigrationsPerCluster")...); ok {
			perCluster = v
		}
		if v, ok, _ := unstructured.NestedInt64(hco.Object, kubevirt.HCOFieldPath(version, "liveMigrationConfig", "parallelOutboundMigrationsPerNode")...); ok {
			perNode = v
		}
	}
	// The HCO's limits are the administrator's, unbounded: the scaled ones
	// are kept within the range of the options, so that the admission
	// policy can pin what the server writes (Writes).
	l := EvictionLimits{FromHCO: true,
		Total: clamp(ScaleMigrationLimit(perCluster), validation.EvictionLimitTotal),
		Node:  clamp(ScaleMigrationLimit(perNode), validation.EvictionLimitNode)}
	if la.EvictionLimitTotal != nil {
		l.Total = int64(*la.EvictionLimitTotal)
	}
	if la.EvictionLimitNode != nil {
		l.Node = int64(*la.EvictionLimitNode)
	}
	return l
}

func clamp(v int64, r validation.Range) int64 {
	return min(max(v, int64(r.Min)), int64(r.Max))
}

func deschedulerItem(ctx context.Context, cluster profiles.Cluster, la *v1alpha1.LoadAwareConfig) (profiles.Item, error) {
	item := profiles.Item{
		Name: itemDescheduler,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": profiles.KubeDeschedulerGVK.GroupVersion().String(),
			"kind":       profiles.KubeDeschedulerGVK.Kind,
			"metadata":   map[string]interface{}{"name": profiles.DeschedulerName, "namespace": profiles.DeschedulerNamespace},
		}},
	}
	// The three inputs are independent: read them together.
	objs, err := getAll(ctx, cluster,
		profiles.ObjectRef{GVK: profiles.CRDGVK, Name: profiles.DeschedulerCRDName},
		profiles.ObjectRef{GVK: profiles.KubeDeschedulerGVK, Namespace: profiles.DeschedulerNamespace, Name: profiles.DeschedulerName},
		profiles.ObjectRef{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName})
	if err != nil {
		return item, err
	}
	crd, live, hco := objs[0], objs[1], objs[2]
	if crd == nil {
		item.Err = fmt.Errorf("cannot read CustomResourceDefinition %s to learn which descheduler profiles the installed operator offers", profiles.DeschedulerCRDName)
		return item, nil
	}
	schema := readSchema(crd)
	selected, err := selectProfile(schema)
	if err != nil {
		item.Err = err
		return item, nil
	}
	spec := map[string]interface{}{
		"managementState":             managementState,
		"deschedulingIntervalSeconds": int64(*la.DeschedulingIntervalSeconds),
		"mode":                        la.Mode,
		"profiles":                    wantedProfiles(live, selected),
	}
	item.ManagedFields = []string{"spec.managementState", "spec.deschedulingIntervalSeconds", "spec.mode", "spec.profiles"}
	message := fmt.Sprintf("KubeDescheduler '%s' will be configured with profile '%s'", profiles.DeschedulerName, selected)
	var notes []string
	switch selected {
	case profileKubeVirt, profileDevKubeVirt:
		fields, kvNotes, err := kubeVirtSpec(la, schema, hco, spec)
		if err != nil {
			item.Err = err
			return item, nil
		}
		item.ManagedFields = append(item.ManagedFields, fields...)
		notes = append(notes, kvNotes...)
	case profileLongLife:
		// LongLifecycle takes no KubeVirt customizations: none is sent.
		notes = append(notes, migrationCooldowns(la, deschedulerSchema{}, map[string]interface{}{})...)
	}
	item.Desired.Object["spec"] = spec
	if len(notes) > 0 {
		message += " (" + strings.Join(notes, "; ") + ")"
	}
	item.Message = message
	return item, nil
}

// selectProfile is the first of preferredProfiles the installed operator offers.
func selectProfile(schema deschedulerSchema) (string, error) {
	for _, p := range preferredProfiles {
		if schema.profiles[p] {
			return p, nil
		}
	}
	return "", fmt.Errorf("the installed descheduler operator offers none of the profiles %s; upgrade the Descheduler Operator", strings.Join(preferredProfiles, ", "))
}

// wantedProfiles keeps the profiles of the live object the profile leaves
// alone (keptProfiles) and adds the selected one.
func wantedProfiles(live *unstructured.Unstructured, selected string) []interface{} {
	var existing []string
	if live != nil {
		existing, _, _ = unstructured.NestedStringSlice(live.Object, "spec", "profiles")
	}
	var wanted []interface{}
	for _, p := range existing {
		if slices.Contains(keptProfiles, p) {
			wanted = append(wanted, p)
		}
	}
	return append(wanted, selected)
}

// kubeVirtSpec adds to spec the customizations and eviction limits of the
// KubeVirt profiles the installed operator has, and returns the fields it
// set and a note for each it could not.
func kubeVirtSpec(la *v1alpha1.LoadAwareConfig, schema deschedulerSchema, hco *unstructured.Unstructured, spec map[string]interface{}) (fields, notes []string, err error) {
	custom, notes, err := customizations(la, schema)
	if err != nil {
		return nil, nil, err
	}
	if len(custom) > 0 {
		spec["profileCustomizations"] = custom
		fields = append(fields, "spec.profileCustomizations")
	}
	if schema.evictionLimits {
		limits := evictionLimits(hco, la)
		el := map[string]interface{}{"total": limits.Total}
		if schema.evictionLimitNode {
			el["node"] = limits.Node
		} else {
			notes = append(notes, "evictionLimits.node is not supported by the installed operator and is not set")
		}
		spec["evictionLimits"] = el
		fields = append(fields, "spec.evictionLimits")
	}
	return fields, notes, nil
}

// customizations are the profileCustomizations the installed operator has,
// with a note for each it has not.
func customizations(la *v1alpha1.LoadAwareConfig, schema deschedulerSchema) (map[string]interface{}, []string, error) {
	custom := map[string]interface{}{}
	var notes []string
	if schema.customizations[customEvictionsInBackground] {
		custom[customEvictionsInBackground] = true
	}
	if schema.customizations[customSoftTainter] {
		custom[customSoftTainter] = true
	} else {
		notes = append(notes, "devEnableSoftTainter is not supported by the installed operator and is not set")
	}
	if schema.customizations[customDeviationThresholds] {
		value, note, err := deviationThresholds(la.DevDeviationThresholds, schema)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		custom[customDeviationThresholds] = value
	} else {
		notes = append(notes, fmt.Sprintf("devDeviationThresholds %s is not supported by the installed operator and is not set", la.DevDeviationThresholds))
	}
	return custom, append(notes, migrationCooldowns(la, schema, custom)...), nil
}

// deviationThresholds is the threshold to send: the option, or its
// symmetric twin when the installed operator has only that one.
func deviationThresholds(value string, schema deschedulerSchema) (string, string, error) {
	if len(schema.thresholds) == 0 || schema.thresholds[value] {
		return value, "", nil
	}
	if twin, ok := symmetricTwin[value]; ok && schema.thresholds[twin] {
		return twin, fmt.Sprintf("devDeviationThresholds %s is not supported by the installed operator, using %s", value, twin), nil
	}
	return "", "", fmt.Errorf("devDeviationThresholds %s is not supported by the installed descheduler operator (it accepts %s)", value, strings.Join(sortedKeys(schema.thresholds), ", "))
}

// migrationCooldowns adds to custom the cooldowns the user set and the
// installed operator has (5.4.0 and later), as Go durations, and returns a
// note for each one it has not. Unset ones are left to the descheduler.
func migrationCooldowns(la *v1alpha1.LoadAwareConfig, schema deschedulerSchema, custom map[string]interface{}) []string {
	var notes []string
	for _, c := range []struct{ field, value string }{
		{customMigrationCooldown, la.DevMigrationCooldown},
		{customMaxMigrationCooldown, la.DevMaxMigrationCooldown},
		{customMigrationHistory, la.DevMigrationHistoryWindow},
	} {
		if c.value == "" {
			continue
		}
		if !schema.customizations[c.field] {
			notes = append(notes, fmt.Sprintf("%s %s is not supported by the installed operator (descheduler operator 5.4.0 and later) and is not set", c.field, c.value))
			continue
		}
		// Validation admitted only durations; send one spelling of each so
		// that "90m" and "1h30m" are the same plan.
		d, err := time.ParseDuration(c.value)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s %q is not a duration and is not set", c.field, c.value))
			continue
		}
		custom[c.field] = d.String()
	}
	return notes
}

// getAll reads objects concurrently; a missing one is nil.
func getAll(ctx context.Context, cluster profiles.Cluster, refs ...profiles.ObjectRef) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = cluster.Get(ctx, ref.GVK, ref.Namespace, ref.Name)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
