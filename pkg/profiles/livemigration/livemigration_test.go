package livemigration

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// cluster is an in-memory profiles.Cluster: lists by kind.
type cluster struct {
	version string
	objects []*unstructured.Unstructured
}

func (c *cluster) Get(context.Context, schema.GroupVersionKind, string, string) (*unstructured.Unstructured, error) {
	return nil, nil
}

func (c *cluster) PreferredVersion(schema.GroupKind) (string, error) { return c.version, nil }

func (c *cluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, o := range c.objects {
		if o.GetKind() == gvk.Kind {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

func workerPool(name, role string, maxUnavailable interface{}) *unstructured.Unstructured {
	spec := map[string]interface{}{"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{role: ""}}}
	if maxUnavailable != nil {
		spec["maxUnavailable"] = maxUnavailable
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigPoolGVK.GroupVersion().String(), "kind": machineconfig.MachineConfigPoolGVK.Kind,
		"metadata": map[string]interface{}{"name": name}, "spec": spec,
	}}
}

func nodes(n int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range n {
		out = append(out, Node("worker-"+string(rune('a'+i))))
	}
	return out
}

func cordoned(n *unstructured.Unstructured) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(n.Object, true, "spec", "unschedulable")
	return n
}

func TestItems(t *testing.T) {
	defaults := v1alpha1.ProfileOptions{LiveMigrationLimits: &v1alpha1.LiveMigrationLimitsConfig{}}
	tests := []struct {
		name    string
		version string
		opts    v1alpha1.ProfileOptions
		objects []*unstructured.Unstructured
		// want are the liveMigrationConfig values; wantErr the item's error.
		want        map[string]interface{}
		wantMessage []string
		wantErr     string
	}{
		{"3 nodes, one drained at once: 4 fit the 2 receivers", kubevirt.HCOVersionV1beta1, defaults,
			append(nodes(3), workerPool("worker", "node-role.kubernetes.io/worker", nil), VMI("a", "worker-a", "8Gi"), VMI("b", "worker-b", "16Gi")),
			map[string]interface{}{"parallelMigrationsPerCluster": int64(4), "parallelOutboundMigrationsPerNode": int64(2),
				"bandwidthPerMigration": "298Mi", "completionTimeoutPerGiB": int64(150), "progressTimeout": int64(150)},
			[]string{"from 3 schedulable node(s): pool worker drains 1 node(s) at once, 2 left", "pool worker: 24Gi of VM memory on 3 node(s), 1 at a time, about 42s"}, ""},
		{"10 nodes, one drained at once, HCO v1: its defaults of 1 per node and 20 s/GiB, the cluster-wide 5", kubevirt.HCOVersionV1, defaults,
			append(nodes(10), workerPool("worker", "node-role.kubernetes.io/worker", nil)),
			map[string]interface{}{"parallelMigrationsPerCluster": int64(5), "parallelOutboundMigrationsPerNode": int64(1),
				"bandwidthPerMigration": "596Mi", "completionTimeoutPerGiB": int64(20), "progressTimeout": int64(150)},
			[]string{"(hco.kubevirt.io/v1)", "pool worker: 0 of VM memory on 10 node(s)"}, ""},
		{"10 nodes, a pool draining 40 %: 4 nodes × 2 not throttled by 5", kubevirt.HCOVersionV1beta1, defaults,
			append(nodes(10), workerPool("worker", "node-role.kubernetes.io/worker", "40%")),
			map[string]interface{}{"parallelMigrationsPerCluster": int64(8), "parallelOutboundMigrationsPerNode": int64(2),
				"bandwidthPerMigration": "298Mi", "completionTimeoutPerGiB": int64(150), "progressTimeout": int64(150)},
			[]string{"pool worker drains 4 node(s) at once, 6 left"}, ""},
		{"a cordoned node receives nothing", kubevirt.HCOVersionV1beta1, defaults,
			append(nodes(2), cordoned(Node("worker-z")), workerPool("worker", "node-role.kubernetes.io/worker", nil)),
			map[string]interface{}{"parallelMigrationsPerCluster": int64(2), "parallelOutboundMigrationsPerNode": int64(2),
				"bandwidthPerMigration": "298Mi", "completionTimeoutPerGiB": int64(150), "progressTimeout": int64(150)},
			[]string{"from 2 schedulable node(s)"}, ""},
		{"options: 25 Gbit/s, all of it, 4 per node", kubevirt.HCOVersionV1beta1,
			v1alpha1.ProfileOptions{LiveMigrationLimits: &v1alpha1.LiveMigrationLimitsConfig{MigrationNetworkGbps: ptr.To[int32](25),
				NetworkSharePercent: ptr.To[int32](100), ParallelOutboundMigrationsPerNode: ptr.To[int32](4), CompletionTimeoutPerGiB: ptr.To[int64](800), ProgressTimeout: ptr.To[int64](300)}},
			append(nodes(20), workerPool("worker", "node-role.kubernetes.io/worker", int64(3))),
			map[string]interface{}{"parallelMigrationsPerCluster": int64(12), "parallelOutboundMigrationsPerNode": int64(4),
				"bandwidthPerMigration": "745Mi", "completionTimeoutPerGiB": int64(800), "progressTimeout": int64(300)},
			nil, ""},
		{"one node: nobody receives", kubevirt.HCOVersionV1beta1, defaults,
			append(nodes(1), workerPool("worker", "node-role.kubernetes.io/worker", nil)), nil, nil,
			"pool worker drains 1 node(s) at once and only 1 node(s) are schedulable"},
		{"no node", kubevirt.HCOVersionV1beta1, defaults, nil, nil, nil, "no schedulable node"},
		{"an HCO version this build does not know", "v2", defaults, nodes(3), nil, nil, "HyperConverged v2 is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := New().Items(context.Background(), profiles.Inputs{ConfigName: Name, Options: tt.opts, Cluster: &cluster{version: tt.version, objects: tt.objects}})
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 {
				t.Fatalf("got %d items, want 1", len(items))
			}
			it := items[0]
			if tt.wantErr != "" {
				if it.Err == nil || !strings.Contains(it.Err.Error(), tt.wantErr) {
					t.Fatalf("item error %v, want %q", it.Err, tt.wantErr)
				}
				return
			}
			if it.Err != nil {
				t.Fatal(it.Err)
			}
			got, _, _ := unstructured.NestedMap(it.Desired.Object, kubevirt.HCOFieldPath(tt.version, "liveMigrationConfig")...)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("liveMigrationConfig %v, want %v", got, tt.want)
			}
			for _, f := range it.ManagedFields {
				if _, ok, _ := unstructured.NestedFieldNoCopy(it.Desired.Object, strings.Split(f, ".")...); !ok {
					t.Errorf("managed field %s is not in the desired state", f)
				}
			}
			for _, m := range tt.wantMessage {
				if !strings.Contains(it.Message, m) {
					t.Errorf("message %q lacks %q", it.Message, m)
				}
			}
		})
	}
}

func TestValidateOptions(t *testing.T) {
	tests := []struct {
		name  string
		opts  advisor.LiveMigrationLimitsConfig
		field string
	}{
		{"unset", advisor.LiveMigrationLimitsConfig{}, ""},
		{"in range", advisor.LiveMigrationLimitsConfig{MigrationNetworkGbps: ptr.To[int32](100), ProgressTimeout: ptr.To[int64](30)}, ""},
		{"a link of 0", advisor.LiveMigrationLimitsConfig{MigrationNetworkGbps: ptr.To[int32](0)}, "spec.options.liveMigrationLimits.migrationNetworkGbps"},
		{"a share over 100", advisor.LiveMigrationLimitsConfig{NetworkSharePercent: ptr.To[int32](101)}, "spec.options.liveMigrationLimits.networkSharePercent"},
		{"11 per node", advisor.LiveMigrationLimitsConfig{ParallelOutboundMigrationsPerNode: ptr.To[int32](11)}, "spec.options.liveMigrationLimits.parallelOutboundMigrationsPerNode"},
		{"a completion timeout of 5", advisor.LiveMigrationLimitsConfig{CompletionTimeoutPerGiB: ptr.To[int64](5)}, "spec.options.liveMigrationLimits.completionTimeoutPerGiB"},
		{"a progress timeout of an hour and a second", advisor.LiveMigrationLimitsConfig{ProgressTimeout: ptr.To[int64](3601)}, "spec.options.liveMigrationLimits.progressTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validation.DeclaredChecks(OptionsBlock, &advisor.ProfileOptions{LiveMigrationLimits: &tt.opts}, field.NewPath("spec", "options", "liveMigrationLimits"))
			switch {
			case tt.field == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tt.field != "" && (len(errs) != 1 || errs[0].Field != tt.field):
				t.Fatalf("errors %v, want one on %s", errs, tt.field)
			}
		})
	}
}

// The examples' values stay within the bounds the admission policy is
// generated from.
func TestExamplesWithinWrites(t *testing.T) {
	for _, ex := range examples() {
		opts := profiles.ResolveOptions(OptionsBlock, v1alpha1.VirtPlatformConfigSpec{Profile: Name, Options: &ex.Options})
		objs := append(ex.Objects, workerPool("worker", "node-role.kubernetes.io/worker", nil))
		items, err := New().Items(context.Background(), profiles.Inputs{ConfigName: Name, Options: opts, Cluster: &cluster{version: kubevirt.HCOVersionV1, objects: objs}})
		if err != nil || items[0].Err != nil {
			t.Fatalf("%s: %v %v", ex.Name, err, items[0].Err)
		}
		lm, _, _ := unstructured.NestedMap(items[0].Desired.Object, "spec", "virtualization", "liveMigrationConfig")
		bw := strings.TrimSuffix(lm["bandwidthPerMigration"].(string), "Mi")
		for name, v := range map[string]int64{"perCluster": lm["parallelMigrationsPerCluster"].(int64)} {
			if !PerCluster.Contains(int32(v)) {
				t.Errorf("%s: %s %d outside %v", ex.Name, name, v, PerCluster)
			}
		}
		if bw == "" || strings.Trim(bw, "0123456789") != "" {
			t.Errorf("%s: bandwidthPerMigration %v is not <n>Mi", ex.Name, lm["bandwidthPerMigration"])
		}
	}
}
