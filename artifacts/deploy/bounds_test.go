package deploy

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/pkg/profiles/hugepages"
)

// bound is a range of values a rule of the policy confines, as the
// package that writes them declares it: the policy admits lo and hi and
// denies one below lo and one above hi.
type bound struct {
	name   string
	lo, hi int64
	// write is the request writing v; denied is in the denial past a bound.
	write  func(v int64) request
	denied string
}

// declaredBounds are the ranges of the catalogue's confined values, from
// the written objects of its examples.
func declaredBounds(t *testing.T) []bound {
	t.Helper()
	desired := desiredObjects(t)
	hp := created(desired["configure-hugepages"], "hugepages")
	kc := created(desired["configure-dedicated-cpus"], "dedicated-cpus")
	return []bound{{
		name: "the huge page count (hugepages.MaxCount)", lo: 1, hi: hugepages.MaxCount,
		write: func(v int64) request {
			return request{op: admission.Create, gvr: machineConfigs, obj: changed(hp, func(o map[string]interface{}) {
				set(o, []interface{}{"default_hugepagesz=1G", "hugepagesz=1G", fmt.Sprintf("hugepages=%d", v)}, "spec", "kernelArguments")
			})}
		},
		denied: "adds no kernel argument to 50-worker-virt-advisor-hugepages but those matching",
	}, {
		name: "the NUMA node of reservedMemory (dedicatedcpus.MaxNUMANode)", lo: 0, hi: dedicatedcpus.MaxNUMANode,
		write: func(v int64) request {
			return request{op: admission.Update, gvr: machineconfig.KubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
				set(o, []interface{}{map[string]interface{}{"numaNode": v, "limits": map[string]interface{}{
					"memory": fmt.Sprintf("%dMi", dedicatedcpus.ReservedMemoryMiB)}}}, "spec", "kubeletConfig", "reservedMemory")
			})}
		},
		denied: "sets in kubeletConfig of KubeletConfig virt-advisor-dedicated-cpus only",
	}}
}

// TestDeniesPastEachBound: at each bound of a confined range the policy
// admits the write, one beyond it denies it.
func TestDeniesPastEachBound(t *testing.T) {
	v := compileDeployed(t)
	for _, b := range declaredBounds(t) {
		for _, c := range []struct {
			value  int64
			denied bool
		}{{b.lo - 1, true}, {b.lo, false}, {b.hi, false}, {b.hi + 1, true}} {
			t.Run(fmt.Sprintf("%s=%d", b.name, c.value), func(t *testing.T) {
				got := review(t, v, b.write(c.value))
				switch {
				case !c.denied && got != "":
					t.Errorf("denied at the bound: %s", got)
				case c.denied && got == "":
					t.Error("admitted one past the bound")
				case c.denied && !strings.Contains(got, b.denied):
					t.Errorf("denial %q\nwant one containing %q", got, b.denied)
				}
			})
		}
	}
}

// TestAdmitsOnlyTheDeclaredValues: of a KubeletConfig key whose writer
// declares its values (Write.Values, OneOf), the policy admits each and
// denies another.
func TestAdmitsOnlyTheDeclaredValues(t *testing.T) {
	v := compileDeployed(t)
	var kc *unstructured.Unstructured
	for _, vr := range variants() {
		if vr.profile.Metadata().Name != dedicatedcpus.Name {
			continue
		}
		for _, it := range items(t, vr, newCluster(t, kubevirt.HCOVersionV1beta1, deschedulerCRDs(t)[0])) {
			if it.Name == "configure-dedicated-cpus" {
				kc = created(it.Desired, dedicatedcpus.Name)
			}
		}
		break
	}
	oneOf := kubeletConfigValues().oneOf
	if kc == nil || len(oneOf) == 0 {
		t.Fatal("no example writes a KubeletConfig with declared values: the rule goes untested")
	}
	for key, values := range oneOf {
		cases := map[string]bool{"not-one-of-them": true}
		for _, val := range values.([]interface{}) {
			cases[val.(string)] = false
		}
		for val, denied := range cases {
			t.Run(key+"="+val, func(t *testing.T) {
				got := review(t, v, request{op: admission.Update, gvr: machineconfig.KubeletConfigs, old: kc, obj: edited(kc, func(o map[string]interface{}) {
					set(o, val, "spec", "kubeletConfig", key)
				})})
				switch {
				case !denied && got != "":
					t.Errorf("denied a declared value: %s", got)
				case denied && !strings.Contains(got, "not "+key):
					t.Errorf("denial %q, want one naming %s", got, key)
				}
			})
		}
	}
}
