// Package profiles defines what a tuning profile is. Each profile lives in
// its own package; package catalog lists the profiles this build knows.
package profiles

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Labels and annotations this project puts on objects.
const (
	// ManagedByLabel marks objects this project created, with the name of the
	// VirtPlatformConfig; only such objects are ever deleted (pruned).
	ManagedByLabel = "advisor.kubevirt.io/managed-by"

	AutoCreatedAnnotation   = "advisor.kubevirt.io/auto-created"
	DescriptionAnnotation   = "advisor.kubevirt.io/description"
	ImpactSummaryAnnotation = "advisor.kubevirt.io/impact-summary"
	CategoryLabel           = "advisor.kubevirt.io/category"
)

// Metadata describes a profile to users.
type Metadata struct {
	Name          string
	Category      string // label advisor.kubevirt.io/category: scheduling, density
	Description   string
	ImpactSummary string
	// Level is the worst impact the profile can have.
	Level v1alpha1.Impact
	// Advertised profiles get a VirtPlatformConfig (action Ignore) at startup.
	Advertised bool
	// Options names the block of spec.options the profile reads, by its
	// JSON name (advisor.Options*); "" when it takes no options. Validation
	// admits only that block on its configs, and ResolveOptions defaults it.
	Options string
	// ValidateOptions checks the profile's options block (nil: none to
	// check). The API server calls it on every create and update, with the
	// block's field path: errors are 422s naming the field.
	ValidateOptions func(o *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList
	// Writes are the objects the profile may write and the fields it sets
	// there: the server's RBAC (artifacts/deploy/03-server-rbac.yaml) and
	// the admission policy (05-admission-policy.yaml) are generated from
	// them, and docs/api.md lists them (go test ./artifacts/deploy -update,
	// go test ./docs -update).
	Writes []Write
	// Reads are the other resources its items derive from (Items reads
	// them, InputObjects names them): with Writes, the server's read rights
	// (get, list, watch) in 03-server-rbac.yaml are generated from them,
	// and the catalogue's tests fail on a read of any other.
	Reads []Read
	// Examples are configurations of the profile, the first its sample
	// (artifacts/samples/<name>.yaml, with SampleNote): the admission policy's
	// tests admit every write each makes on the baseline cluster plus the
	// example's Objects, and the catalogue's tests validate and plan them.
	Examples []Example
	// SampleNote is the comment at the top of the profile's sample
	// (artifacts/samples/<name>.yaml, generated from it and the first
	// example by go test ./artifacts/samples -update): what it configures,
	// and how to go on.
	SampleNote string
}

// Write is an object a profile writes.
type Write struct {
	// Resource is the object's group and resource (e.g. hco.kubevirt.io,
	// hyperconvergeds); Namespace is "" for a cluster-scoped object.
	Resource        schema.GroupResource
	Namespace, Name string
	// Name may hold PoolPlaceholder once, for an object a profile makes
	// for the MachineConfigPool its options name (a MachineConfig): RBAC
	// cannot name those, the admission policy admits the names with any
	// pool in its place and the pool as their role label.
	// Create and Delete: the profile makes (and prunes) the whole object;
	// otherwise it only patches fields of an object someone else made. An
	// object a profile creates is also deleted by its revert: Create
	// goes with Delete.
	Create, Delete bool
	// Fields are the keys of the object's spec (or data) the profile
	// sets; on the HyperConverged, the keys of its virtualization settings
	// (spec in v1beta1, spec.virtualization in v1).
	Fields []string
	// Why says, for the RBAC comment and the docs, what the write is for.
	Why string
	// KernelArguments is the value rule of a MachineConfig's
	// kernelArguments: the patterns (anchored regular expressions) of the
	// arguments the profile adds. The admission policy admits no other
	// (go test ./artifacts/deploy -update generates them into it).
	KernelArguments []string
	// Values are the value rules of keys under the fields it sets: the
	// admission policy admits no other value there (generated into it by
	// go test ./artifacts/deploy -update, one template per kind of rule).
	Values []Value
}

// Value is the rule of what a profile writes at Path (a dot path under
// the object's spec, e.g. kubeletConfig.topologyManagerPolicy): exactly
// Pinned, one of OneOf, or a string matching Pattern.
type Value struct {
	Path    string
	Pinned  interface{}
	OneOf   []string
	Pattern string
}

// Exactly are patterns that match these strings only.
func Exactly(values ...string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = "^" + regexp.QuoteMeta(v) + "$"
	}
	return out
}

// ManagedResources are the resources of the objects the profile may
// change: those its Writes name, each once, in their order.
func (m Metadata) ManagedResources() []schema.GroupResource {
	var out []schema.GroupResource
	for _, w := range m.Writes {
		if !slices.Contains(out, w.Resource) {
			out = append(out, w.Resource)
		}
	}
	return out
}

// Read is a resource a profile reads beyond what it writes.
type Read struct {
	Resource schema.GroupResource
	// Why says, for the RBAC comment, what the profile derives from it.
	Why string
}

// Well-known resources the profiles read.
var (
	NodesResource = schema.GroupResource{Resource: "nodes"}
	PoolsResource = schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools"}
	VMIsResource  = schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}
)

// PoolPlaceholder stands for a MachineConfigPool's name in Write.Name.
const PoolPlaceholder = "{pool}"

// Example is one configuration of a profile.
type Example struct {
	Name    string
	Options v1alpha1.ProfileOptions
	// Objects are what the example reads beyond the test cluster's
	// baseline (artifacts/testdata/baseline.yaml): Nodes, VMIs.
	Objects []*unstructured.Unstructured
}

// ResolveOptions returns the options a config runs with: the block of
// spec.options its profile reads (Metadata.Options) with every default
// applied, set or not, so profiles never see unset fields. The spec is
// not modified.
func ResolveOptions(block string, spec v1alpha1.VirtPlatformConfigSpec) v1alpha1.ProfileOptions {
	tmp := &v1alpha1.VirtPlatformConfig{Spec: *spec.DeepCopy()}
	if tmp.Spec.Options == nil {
		tmp.Spec.Options = &v1alpha1.ProfileOptions{}
	}
	if block != "" {
		// Decoding {"<block>": {}} allocates the block when it is unset
		// and leaves a set one as it is.
		empty, err := json.Marshal(map[string]struct{}{block: {}})
		utilruntime.Must(err)
		utilruntime.Must(json.Unmarshal(empty, tmp.Spec.Options))
	}
	v1alpha1.SetObjectDefaults_VirtPlatformConfig(tmp)
	return *tmp.Spec.Options
}

// Prerequisite is an API the profile needs, with an install hint.
type Prerequisite struct {
	GVK         schema.GroupVersionKind
	Description string
}

// Cluster reads objects of the main cluster for a profile.
type Cluster interface {
	// Get returns the object, or nil and no error when it does not exist.
	// An empty gvk.Version reads through the version discovery prefers.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// PreferredVersion is the version discovery prefers for the kind; ""
	// when the cluster does not serve it.
	PreferredVersion(gk schema.GroupKind) (string, error)
	// List returns the objects of a kind ({} when the kind is not served).
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error)
}

// Inputs are what a profile computes its items from.
type Inputs struct {
	// ConfigName is the VirtPlatformConfig name (ManagedByLabel's value).
	ConfigName string
	// Options are the VirtPlatformConfig options with every default resolved.
	Options v1alpha1.ProfileOptions
	Cluster Cluster
}

// Item is one object a profile wants configured, or an object it created
// earlier and no longer wants (Absent).
type Item struct {
	// Name identifies the item, e.g. enable-psi-metrics.
	Name string
	// Desired is the object applied with server-side apply: apiVersion, kind,
	// metadata (name, namespace, labels) and the managed fields only. For an
	// Absent item only the identity (apiVersion, kind, name, namespace) matters.
	Desired *unstructured.Unstructured
	// ManagedFields are the dot paths the item owns, e.g. spec.kernelArguments.
	ManagedFields []string
	// Impact overrides the default (object missing: Medium, exists: Low).
	Impact  v1alpha1.Impact
	Message string
	// Owned objects are whole objects the profile makes. The plan labels
	// one ManagedByLabel only when it creates it (or adopts one only the
	// earlier operator ever wrote); an existing object someone else made
	// is configured but never labelled.
	Owned bool
	// Absent: the profile no longer wants this owned object; the plan
	// deletes it only if virt-advisor made it, and otherwise leaves it in
	// place with an item that says so.
	Absent bool
	// ShowVersion names the target's apiVersion in the diff: the kind is
	// served in several versions and the one used matters to the reader.
	ShowVersion bool
	// Warnings are findings the plan reports without blocking on them.
	Warnings []string
	// Check, when set, is a finding that changes nothing written (a
	// coverage check): the plan runs it while the item is dry-run and adds
	// its sentence to the message and its warnings to Warnings.
	Check func(ctx context.Context) (sentence string, warnings []string)
	// Err says why the item cannot be planned (e.g. the installed API offers
	// nothing usable); the plan reports it on the item.
	Err error
}

// Profile is a tuning profile.
type Profile interface {
	Metadata() Metadata
	// Prerequisites are the APIs needed with these (defaulted) options.
	Prerequisites(opts v1alpha1.ProfileOptions) []Prerequisite
	// Items computes the desired objects, in the order they are applied.
	Items(ctx context.Context, in Inputs) ([]Item, error)
	// InputObjects are the objects whose content the desired states are
	// derived from (e.g. the HyperConverged CR), targets read for that
	// marked Target.
	InputObjects(opts v1alpha1.ProfileOptions) []ObjectRef
	// DescribeInputChange explains, for users, why the desired state of an
	// item changed while the spec did not ("" when it cannot tell).
	DescribeInputChange(item string, applied, desired map[string]interface{}) string
}

// ObjectRef names an object of the main cluster; with no Name, every
// object of the kind (the profile lists them: a Node that joins a pool is
// not named beforehand). The controller follows such a kind as a whole,
// for the kinds package cluster's KindChanges knows (Node,
// NodeResourceTopology), in what profiles derive from them.
type ObjectRef struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Target: the input is also a target whose desired state is built on
	// its live content (a stale copy would drop what others set), so it is
	// never planned from a watch cache alone: only from a cache a live
	// read confirms.
	Target bool
}

// Well-known kinds of the managed and input APIs (the HyperConverged:
// package kubevirt).
var (
	KubeDeschedulerGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	SchedulerGVK       = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"}
	NodeGVK            = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	ConfigMapGVK       = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	CRDGVK             = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// Well-known objects.
const (
	DeschedulerNamespace = "openshift-kube-descheduler-operator"
	DeschedulerName      = "cluster"
	DeschedulerCRDName   = "kubedeschedulers.operator.openshift.io"
	SchedulerName        = "cluster"
)
