package hugepages

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// cluster is an in-memory profiles.Cluster: lists by kind.
type cluster struct{ objects []*unstructured.Unstructured }

func (c *cluster) Get(context.Context, schema.GroupVersionKind, string, string) (*unstructured.Unstructured, error) {
	return nil, nil
}

func (c *cluster) PreferredVersion(schema.GroupKind) (string, error) { return "", nil }

func (c *cluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, o := range c.objects {
		if o.GetKind() == gvk.Kind {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

func workerPool() *unstructured.Unstructured {
	p := machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 3, false)
	_ = unstructured.SetNestedField(p.Object, map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}}, "spec", "nodeSelector")
	return p
}

// withCapacity sets a Node's status.capacity.memory ("" removes it).
func withCapacity(n *unstructured.Unstructured, memory string) *unstructured.Unstructured {
	if memory == "" {
		unstructured.RemoveNestedField(n.Object, "status", "capacity", "memory")
		return n
	}
	_ = unstructured.SetNestedField(n.Object, memory, "status", "capacity", "memory")
	return n
}

func TestItems(t *testing.T) {
	tests := []struct {
		name  string
		opts  *v1alpha1.HugepagesConfig
		nodes []*unstructured.Unstructured
		// args are the kernel arguments written; else errs the item's
		// error holds.
		args     []string
		messages []string
		errs     []string
	}{{
		name:     "defaults: 1G pages, half of 64 GiB",
		nodes:    []*unstructured.Unstructured{Node("w0", "64Gi", nil), Node("w1", "64Gi", nil)},
		args:     []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=32"},
		messages: []string{"MachineConfig '50-worker-virt-advisor-hugepages'", "32 x 1G pages per node", "w0 32 x 1G of 64.0 GiB, 32.0 GiB left", "w1 32 x 1G", "floor 8 GiB"},
	}, {
		name:     "2M pages, 25 %",
		opts:     &v1alpha1.HugepagesConfig{PageSize: "2M", MemoryPercent: ptr.To[int32](25)},
		nodes:    []*unstructured.Unstructured{Node("w0", "16Gi", nil)},
		args:     []string{"default_hugepagesz=2M", "hugepagesz=2M", "hugepages=2048"},
		messages: []string{"2048 x 2M pages per node", "12.0 GiB left"},
	}, {
		name: "the huge pages a node has count back: the count is stable once rolled out",
		nodes: []*unstructured.Unstructured{
			Node("w0", "32Gi", map[string]string{"hugepages-1Gi": "32Gi"}), // rolled out
			Node("w1", "64Gi", nil), // not yet
		},
		args:     []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=32"},
		messages: []string{"w0 32 x 1G of 64.0 GiB, 32.0 GiB left", "w1 32 x 1G of 64.0 GiB"},
	}, {
		name: "nodes that differ by less than a GiB agree; the smallest sets the count",
		nodes: []*unstructured.Unstructured{
			Node("w0", "65000Mi", nil), Node("w1", "64900Mi", nil),
		},
		args: []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=31"},
	}, {
		name:  "mixed memory is refused, naming the nodes",
		nodes: []*unstructured.Unstructured{Node("w0", "64Gi", nil), Node("w1", "64Gi", nil), Node("big", "128Gi", nil)},
		errs:  []string{"MachineConfigPool 'worker' differ in allocatable memory", "w0, w1 have 64 GiB", "big has 128 GiB"},
	}, {
		name:  "a share leaving less than the floor is refused with the numbers",
		opts:  &v1alpha1.HugepagesConfig{MemoryPercent: ptr.To[int32](90), FloorGiB: ptr.To[int32](8)},
		nodes: []*unstructured.Unstructured{Node("w0", "32Gi", nil)},
		errs:  []string{"90% of node 'w0''s 32.0 GiB is 28 1G pages", "leaving 4.0 GiB", "floor of 8 GiB", "at most 75"},
	}, {
		name:  "a larger floor refuses what the default allows",
		opts:  &v1alpha1.HugepagesConfig{FloorGiB: ptr.To[int32](40)},
		nodes: []*unstructured.Unstructured{Node("w0", "64Gi", nil)},
		errs:  []string{"leaving 32.0 GiB", "floor of 40 GiB", "at most 37"},
	}, {
		name:  "less than one page",
		opts:  &v1alpha1.HugepagesConfig{MemoryPercent: ptr.To[int32](1)},
		nodes: []*unstructured.Unstructured{Node("w0", "16Gi", nil)},
		errs:  []string{"less than one 1G page", "pageSize 2M"},
	}, {
		name:  "allocatable memory above the memory capacity is refused, naming the node",
		nodes: []*unstructured.Unstructured{Node("w0", "64Gi", nil), withCapacity(Node("w1", "640Gi", nil), "64Gi")},
		errs:  []string{"node 'w1' reports 640.0 GiB of allocatable memory and 0.0 GiB of huge pages, more than its memory capacity of 64.0 GiB (status.allocatable.memory, the hugepages-* and memory of status.capacity): the huge page count is not sized from a report that cannot be true"},
	}, {
		name:  "allocatable memory and huge pages above the memory capacity",
		nodes: []*unstructured.Unstructured{withCapacity(Node("w0", "32Gi", map[string]string{"hugepages-1Gi": "32Gi"}), "48Gi")},
		errs:  []string{"node 'w0' reports 32.0 GiB of allocatable memory and 32.0 GiB of huge pages, more than its memory capacity of 48.0 GiB"},
	}, {
		name:  "no memory capacity",
		nodes: []*unstructured.Unstructured{withCapacity(Node("w0", "64Gi", nil), "")},
		errs:  []string{"node 'w0' reports no memory capacity (status.capacity.memory)"},
	}, {
		name:  "allocatable memory as large as the capacity (the control)",
		nodes: []*unstructured.Unstructured{withCapacity(Node("w0", "64Gi", nil), "64Gi")},
		args:  []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=32"},
	}, {
		name: "no nodes",
		errs: []string{"MachineConfigPool 'worker' has no nodes"},
	}, {
		name:  "a pool that does not exist",
		opts:  &v1alpha1.HugepagesConfig{Pool: "gpu"},
		nodes: []*unstructured.Unstructured{Node("w0", "64Gi", nil)},
		errs:  []string{"there is no MachineConfigPool 'gpu'"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{objects: append([]*unstructured.Unstructured{workerPool()}, tt.nodes...)}
			opts := tt.opts
			if opts == nil {
				opts = &v1alpha1.HugepagesConfig{}
			}
			items, err := New().Items(context.Background(), profiles.Inputs{ConfigName: Name, Options: v1alpha1.ProfileOptions{Hugepages: opts}, Cluster: c})
			if err != nil || len(items) != 1 {
				t.Fatalf("Items = %v, %v", items, err)
			}
			it := items[0]
			if tt.errs != nil {
				if it.Err == nil {
					t.Fatalf("no error; message %q", it.Message)
				}
				// The plan engine names the target of a refused item.
				if it.Desired == nil || it.Desired.GetKind() != "MachineConfig" || !strings.HasSuffix(it.Desired.GetName(), NameSuffix) {
					t.Errorf("refused item's Desired %v: want the MachineConfig's identity", it.Desired)
				}
				for _, s := range tt.errs {
					if !strings.Contains(it.Err.Error(), s) {
						t.Errorf("error %q lacks %q", it.Err, s)
					}
				}
				return
			}
			if it.Err != nil {
				t.Fatal(it.Err)
			}
			got, _, _ := unstructured.NestedStringSlice(it.Desired.Object, "spec", "kernelArguments")
			if !reflect.DeepEqual(got, tt.args) {
				t.Errorf("kernelArguments = %v, want %v", got, tt.args)
			}
			if role := it.Desired.GetLabels()[machineconfig.RoleLabel]; role != "worker" || it.Desired.GetName() != "50-worker-virt-advisor-hugepages" {
				t.Errorf("MachineConfig %s role %q", it.Desired.GetName(), role)
			}
			if !it.Owned || it.Impact != v1alpha1.ImpactHigh {
				t.Errorf("Owned %v, Impact %s", it.Owned, it.Impact)
			}
			for _, s := range tt.messages {
				if !strings.Contains(it.Message, s) {
					t.Errorf("message %q lacks %q", it.Message, s)
				}
			}
		})
	}
}

// A custom pool that also selects the worker role gets the MachineConfig
// too: its nodes are counted and named.
func TestCustomPoolSelectingTheRole(t *testing.T) {
	cnv := machineconfigtest.Pool("worker-cnv", machineconfigtest.RoleSelector("worker", "worker-cnv"), 1, 1, false)
	_ = unstructured.SetNestedField(cnv.Object, map[string]interface{}{"matchLabels": map[string]interface{}{"cnv": ""}}, "spec", "nodeSelector")
	big := Node("cnv-0", "128Gi", nil)
	big.SetLabels(map[string]string{"cnv": ""})
	c := &cluster{objects: []*unstructured.Unstructured{workerPool(), cnv, Node("w0", "64Gi", nil), big}}
	items, _ := New().Items(context.Background(), profiles.Inputs{Options: v1alpha1.ProfileOptions{Hugepages: &v1alpha1.HugepagesConfig{}}, Cluster: c})
	if items[0].Err == nil || !strings.Contains(items[0].Err.Error(), "cnv-0 of pool worker-cnv has 128 GiB; w0 of pool worker has 64 GiB") {
		t.Errorf("want the custom pool's node named; got %v", items[0].Err)
	}
	big.Object["status"] = Node("x", "64Gi", nil).Object["status"]
	items, _ = New().Items(context.Background(), profiles.Inputs{Options: v1alpha1.ProfileOptions{Hugepages: &v1alpha1.HugepagesConfig{}}, Cluster: c})
	if items[0].Err != nil || !strings.Contains(items[0].Message, "also rendered into MachineConfigPool(s) 'worker-cnv'") || !strings.Contains(items[0].Message, "cnv-0 32 x 1G") {
		t.Errorf("item %v: %q", items[0].Err, items[0].Message)
	}
}

func TestValidateOptions(t *testing.T) {
	path := field.NewPath("spec", "options", "hugepages")
	tests := []struct {
		name string
		opts v1alpha1.HugepagesConfig
		want []string
	}{
		{name: "defaults", opts: v1alpha1.HugepagesConfig{}},
		{name: "every bound", opts: v1alpha1.HugepagesConfig{Pool: "worker-cnv", PageSize: "2M", MemoryPercent: ptr.To[int32](90), FloorGiB: ptr.To[int32](1024)}},
		{name: "page size", opts: v1alpha1.HugepagesConfig{PageSize: "1Gi"}, want: []string{`spec.options.hugepages.pageSize: Unsupported value: "1Gi": supported values: "1G", "2M"`}},
		{name: "a share leaving nothing", opts: v1alpha1.HugepagesConfig{MemoryPercent: ptr.To[int32](100)}, want: []string{"spec.options.hugepages.memoryPercent: Invalid value: 100: must be between 1 and 90, inclusive"}},
		{name: "no share", opts: v1alpha1.HugepagesConfig{MemoryPercent: ptr.To[int32](0)}, want: []string{"spec.options.hugepages.memoryPercent: Invalid value: 0: must be between 1 and 90"}},
		{name: "floor", opts: v1alpha1.HugepagesConfig{FloorGiB: ptr.To[int32](0)}, want: []string{"spec.options.hugepages.floorGiB: Invalid value: 0: must be between 1 and 1024"}},
		{name: "pool", opts: v1alpha1.HugepagesConfig{Pool: "Worker_1"}, want: []string{"spec.options.hugepages.pool: Invalid value: \"Worker_1\""}},
		{name: "the control plane's pool, as dedicated-cpus", opts: v1alpha1.HugepagesConfig{Pool: "master"},
			want: []string{"spec.options.hugepages.pool: Forbidden: the control plane's pool is not for VMs (its MachineConfig 50-master-virt-advisor-hugepages would reboot the control-plane nodes): name the pool of the nodes that run VMs"}},
		{name: "pool too long for the MachineConfig name", opts: v1alpha1.HugepagesConfig{Pool: strings.Repeat("a", 240)}, want: []string{"makes the MachineConfig name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &advisor.ProfileOptions{Hugepages: &advisor.HugepagesConfig{Pool: tt.opts.Pool, PageSize: tt.opts.PageSize, MemoryPercent: tt.opts.MemoryPercent, FloorGiB: tt.opts.FloorGiB}}
			errs := append(validation.DeclaredChecks("hugepages", in, path), validateOptions(in, path)...)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", errs, len(tt.want))
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.want[i]) {
					t.Errorf("error %q lacks %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}

// Every count the profile can write matches the admission policy's
// patterns (KernelArgumentPatterns).
func TestKernelArgumentsWithinPatterns(t *testing.T) {
	for _, size := range PageSizes {
		for _, n := range []int64{1, 32, MaxCount} {
			for _, a := range KernelArguments(size, n) {
				matched := false
				for _, p := range KernelArgumentPatterns() {
					matched = matched || regexpMatch(t, p, a)
				}
				if !matched {
					t.Errorf("%s matches no pattern of %v", a, KernelArgumentPatterns())
				}
			}
		}
	}
}

func regexpMatch(t *testing.T, pattern, s string) bool {
	t.Helper()
	return regexp.MustCompile(pattern).MatchString(s)
}

// The policy's pattern of the count admits exactly 1 to MaxCount: no
// count above what the profile writes, no leading zero, no sign.
func TestCountPatternIsExactlyTheRange(t *testing.T) {
	count := regexp.MustCompile(KernelArgumentPatterns()[2])
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 999999, 1000000, 1048575, MaxCount, MaxCount + 1, 1048580, 1049999, 1099999, 1999999, 9999999, 10000000} {
		if got, want := count.MatchString(fmt.Sprintf("hugepages=%d", n)), n >= 1 && n <= MaxCount; got != want {
			t.Errorf("hugepages=%d admitted %v, want %v", n, got, want)
		}
	}
	for _, s := range []string{"hugepages=01", "hugepages=+1", "hugepages=-1", "hugepages=", "hugepages=1 init=/bin/sh", "hugepages=1048576 "} {
		if count.MatchString(s) {
			t.Errorf("%q admitted", s)
		}
	}
	// Every number up to ten times the bound, for bounds of each shape.
	for _, max := range []int64{10, 11, 19, 20, 99, 100, 101, 123, 909, 1000, 4096} {
		re := regexp.MustCompile("^" + countPattern(max) + "$")
		for n := int64(0); n <= 10*max; n++ {
			if got, want := re.MatchString(strconv.FormatInt(n, 10)), n >= 1 && n <= max; got != want {
				t.Fatalf("countPattern(%d) = %s admits %d: %v, want %v", max, countPattern(max), n, got, want)
			}
		}
	}
}
