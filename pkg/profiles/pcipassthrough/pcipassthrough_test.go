package pcipassthrough

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

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

// pool is a pool of role name that selects the nodes labelled name.
func pool(name string) *unstructured.Unstructured {
	p := machineconfigtest.Pool(name, machineconfigtest.RoleSelector(name), 2, 2, false)
	_ = unstructured.SetNestedField(p.Object, map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + name: ""}}, "spec", "nodeSelector")
	return p
}

func TestItems(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []*unstructured.Unstructured
		args     []string
		messages []string
		errs     []string
	}{{
		name:     "Intel",
		nodes:    []*unstructured.Unstructured{Node("w0", Intel), Node("w1", Intel)},
		args:     []string{"intel_iommu=on", "iommu=pt"},
		messages: []string{"MachineConfig '50-worker-virt-advisor-pci-passthrough' will be configured with kernel arguments intel_iommu=on iommu=pt", "2 node(s) (w0, w1) have CPU vendor GenuineIntel"},
	}, {
		name:     "AMD: its IOMMU is on by default",
		nodes:    []*unstructured.Unstructured{Node("w0", AMD)},
		args:     []string{"iommu=pt"},
		messages: []string{"kernel arguments iommu=pt for MachineConfigPool 'worker'", "AuthenticAMD", "on by default"},
	}, {
		name:  "mixed vendors are refused, naming the nodes",
		nodes: []*unstructured.Unstructured{Node("w0", Intel), Node("w1", Intel), Node("w2", AMD)},
		errs:  []string{"MachineConfigPool 'worker' differ in CPU vendor", "w0, w1 have GenuineIntel", "w2 has AuthenticAMD"},
	}, {
		name:  "a node without the vendor label makes the pool mixed",
		nodes: []*unstructured.Unstructured{Node("w0", Intel), Node("w1", "")},
		errs:  []string{"differ in CPU vendor", "w1 has unknown"},
	}, {
		name:  "unknown vendor is refused",
		nodes: []*unstructured.Unstructured{Node("w0", ""), Node("w1", "")},
		errs:  []string{"(w0, w1) have CPU vendor unknown", "node-feature-discovery", "feature.node.kubernetes.io/cpu-model.vendor_id"},
	}, {
		name:  "another vendor is refused",
		nodes: []*unstructured.Unstructured{Node("w0", "ARM")},
		errs:  []string{"CPU vendor ARM", "known for GenuineIntel and AuthenticAMD only"},
	}, {
		name: "no nodes",
		errs: []string{"MachineConfigPool 'worker' has no nodes"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{objects: append([]*unstructured.Unstructured{pool("worker")}, tt.nodes...)}
			items, err := New().Items(context.Background(), profiles.Inputs{ConfigName: Name, Options: v1alpha1.ProfileOptions{PciPassthrough: &v1alpha1.PciPassthroughConfig{Pool: "worker"}}, Cluster: c})
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
			if role := it.Desired.GetLabels()[machineconfig.RoleLabel]; role != "worker" {
				t.Errorf("role %q", role)
			}
			for _, a := range got {
				if !contains(KernelArguments(), a) {
					t.Errorf("%s is not among KernelArguments() %v, which the admission policy admits", a, KernelArguments())
				}
			}
			for _, s := range tt.messages {
				if !strings.Contains(it.Message, s) {
					t.Errorf("message %q lacks %q", it.Message, s)
				}
			}
		})
	}
}

// The pool the options name: its own nodes, its own role and name.
func TestOtherPool(t *testing.T) {
	amd := Node("a0", AMD)
	amd.SetLabels(map[string]string{"node-role.kubernetes.io/amd": "", "feature.node.kubernetes.io/cpu-model.vendor_id": AMD})
	c := &cluster{objects: []*unstructured.Unstructured{pool("worker"), pool("amd"), Node("w0", Intel), amd}}
	items, _ := New().Items(context.Background(), profiles.Inputs{Options: v1alpha1.ProfileOptions{PciPassthrough: &v1alpha1.PciPassthroughConfig{Pool: "amd"}}, Cluster: c})
	it := items[0]
	if it.Err != nil || it.Desired.GetName() != "50-amd-virt-advisor-pci-passthrough" || it.Desired.GetLabels()[machineconfig.RoleLabel] != "amd" {
		t.Fatalf("item %v %v", it.Err, it.Desired)
	}
	got, _, _ := unstructured.NestedStringSlice(it.Desired.Object, "spec", "kernelArguments")
	if !reflect.DeepEqual(got, []string{"iommu=pt"}) {
		t.Errorf("kernelArguments %v", got)
	}
	items, _ = New().Items(context.Background(), profiles.Inputs{Options: v1alpha1.ProfileOptions{PciPassthrough: &v1alpha1.PciPassthroughConfig{Pool: "gpu"}}, Cluster: c})
	if items[0].Err == nil || !strings.Contains(items[0].Err.Error(), "there is no MachineConfigPool 'gpu'") {
		t.Errorf("err %v", items[0].Err)
	}
}

func TestValidateOptions(t *testing.T) {
	path := field.NewPath("spec", "options", "pciPassthrough")
	for pool, want := range map[string]string{
		"":           "",
		"worker-cnv": "",
		"Bad_Pool":   `spec.options.pciPassthrough.pool: Invalid value: "Bad_Pool"`,
		// As dedicated-cpus: the control plane's pool is refused.
		"master": "spec.options.pciPassthrough.pool: Forbidden: the control plane's pool is not for VMs (its MachineConfig 50-master-virt-advisor-pci-passthrough would reboot the control-plane nodes)",
	} {
		errs := validateOptions(&advisor.ProfileOptions{PciPassthrough: &advisor.PciPassthroughConfig{Pool: pool}}, path)
		if (want == "") != (len(errs) == 0) || (want != "" && !strings.Contains(errs.ToAggregate().Error(), want)) {
			t.Errorf("pool %q: errors %v, want %q", pool, errs, want)
		}
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}
