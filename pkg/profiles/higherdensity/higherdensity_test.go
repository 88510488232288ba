package higherdensity

import (
	"context"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Copied verbatim from the desiredState in seed 004_89f53f28fd2ac9fe.
const (
	seedFindSwapPartitionSource = "data:text/plain;charset=utf-8;base64,IyEvdXNyL2Jpbi9lbnYgYmFzaApzZXQgLWV1byBwaXBlZmFpbAoKUEFSVExBQkVMPSJDTlZfU1dBUCIKREVWSUNFPSIvZGV2L2Rpc2svYnktcGFydGxhYmVsLyR7UEFSVExBQkVMfSIKCmlmIFtbICEgLWUgIiRERVZJQ0UiIF1dOyB0aGVuCiAgZWNobyAiU3dhcCBwYXJ0aXRpb24gd2l0aCBQQVJUTEFCRUw9JHtQQVJUTEFCRUx9IG5vdCBmb3VuZCIgPiYyCiAgZXhpdCAxCmZpCgppZiBzd2Fwb24gLS1zaG93PU5BTUUgfCBncmVwIC1xICIkREVWSUNFIjsgdGhlbgogIGVjaG8gIlN3YXAgYWxyZWFkeSBlbmFibGVkIG9uICRERVZJQ0UiID4mMgogIGV4aXQgMQpmaQoKZWNobyAiRW5hYmxpbmcgc3dhcCBvbiAkREVWSUNFIiA+JjIKc3dhcG9uICIkREVWSUNFIgp0b3VjaCAvdmFyL3RtcC9zd2FwZmlsZQ=="
)

const configName = "virt-higher-density"

// cluster is an in-memory profiles.Cluster serving the HyperConverged in
// one version, with pools and nodes to list.
type cluster struct {
	hcoVersion string
	lists      map[string][]unstructured.Unstructured // by kind
	listErr    error
}

func (c cluster) Get(context.Context, schema.GroupVersionKind, string, string) (*unstructured.Unstructured, error) {
	return nil, nil
}

func (c cluster) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk == kubevirt.HyperConvergedGVK.GroupKind() {
		return c.hcoVersion, nil
	}
	return "v1", nil
}

func (c cluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	if c.listErr != nil {
		return nil, c.listErr
	}
	return c.lists[gvk.Kind], nil
}

func items(t *testing.T, c *v1alpha1.VirtHigherDensityConfig) []profiles.Item {
	t.Helper()
	return itemsIn(t, cluster{hcoVersion: "v1beta1"}, c)
}

func itemsIn(t *testing.T, cl profiles.Cluster, c *v1alpha1.VirtHigherDensityConfig) []profiles.Item {
	t.Helper()
	got, err := New().Items(context.Background(), profiles.Inputs{
		ConfigName: configName,
		Options:    v1alpha1.ProfileOptions{VirtHigherDensity: c},
		Cluster:    cl,
	})
	if err != nil {
		t.Fatalf("Items: %v", err)
	}
	// The kernel tunings come last, as deletion requests when off (then
	// nothing is planned unless a MachineConfig of ours exists).
	if want := []string{"enable-kubelet-swap", "configure-higher-density", "enable-ksm-zero-pages", "enable-thp-madvise"}; !reflect.DeepEqual(names(got), want) {
		t.Fatalf("items = %v, want %v", names(got), want)
	}
	for _, it := range got {
		it.Desired.DeepCopy() // panics on values unstructured cannot hold
	}
	return got
}

func names(items []profiles.Item) []string {
	var n []string
	for _, it := range items {
		n = append(n, it.Name)
	}
	return n
}

func defaults() *v1alpha1.VirtHigherDensityConfig {
	return &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](150)}
}

func mustSlice(t *testing.T, obj map[string]interface{}, path ...string) []interface{} {
	t.Helper()
	s, ok, err := unstructured.NestedSlice(obj, path...)
	if err != nil || !ok {
		t.Fatalf("%s: found=%v err=%v", strings.Join(path, "."), ok, err)
	}
	return s
}

func decodeSource(t *testing.T, source string) string {
	t.Helper()
	const prefix = "data:text/plain;charset=utf-8;base64,"
	if !strings.HasPrefix(source, prefix) {
		t.Fatalf("source %q lacks prefix %q", source, prefix)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(source, prefix))
	if err != nil {
		t.Fatalf("decoding %q: %v", source, err)
	}
	return string(b)
}

func TestMetadata(t *testing.T) {
	want := profiles.Metadata{
		Name:          "virt-higher-density",
		Category:      "density",
		Description:   "Enables higher VM density through swap and other optimizations",
		ImpactSummary: "Enables swap for kubelet to allow memory overcommit and higher VM density. Requires nodes with swap partition labeled CNV_SWAP.",
		Level:         v1alpha1.ImpactHigh,
		Advertised:    true,
		Options:       "virtHigherDensity",
	}
	got := New().Metadata()
	if got.ValidateOptions == nil || len(got.Writes) != 4 || len(got.Examples) == 0 {
		t.Errorf("Metadata() has no validation, writes or examples: %+v", got)
	}
	got.ValidateOptions, got.Writes, got.Reads, got.Examples, got.SampleNote = nil, nil, nil, nil, ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Metadata() = %+v, want %+v", got, want)
	}
	wantResources := []schema.GroupResource{machineconfig.MachineConfigs.GroupResource(), {Group: kubevirt.HyperConvergedGVK.Group, Resource: "hyperconvergeds"}}
	if got := New().Metadata().ManagedResources(); !reflect.DeepEqual(got, wantResources) {
		t.Errorf("ManagedResources() = %v, want %v", got, wantResources)
	}
}

func TestPrerequisites(t *testing.T) {
	mc := profiles.Prerequisite{GVK: machineconfig.MachineConfigGVK, Description: "MachineConfig CRD is required for swap configuration (available on OpenShift)"}
	hco := profiles.Prerequisite{GVK: kubevirt.HyperConvergedGVK, Description: "Install OpenShift Virtualization via OLM"}
	tests := []struct {
		name string
		opts *v1alpha1.VirtHigherDensityConfig
		want []profiles.Prerequisite
	}{
		{"swap on", defaults(), []profiles.Prerequisite{mc, hco}},
		{"swap off", &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](110)}, []profiles.Prerequisite{hco}},
		{"unresolved options default to swap on", nil, []profiles.Prerequisite{mc, hco}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().Prerequisites(v1alpha1.ProfileOptions{VirtHigherDensity: tt.opts})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Prerequisites() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSwapMachineConfigContent(t *testing.T) {
	mc := items(t, defaults())[0].Desired
	files := mustSlice(t, mc.Object, "spec", "config", "storage", "files")
	if len(files) != 2 {
		t.Fatalf("files = %d, want 2", len(files))
	}
	tests := []struct {
		path       string
		mode       int64
		wantSource string
		check      func(t *testing.T, decoded string)
	}{
		{
			path: "/etc/find-swap-partition", mode: 493, wantSource: seedFindSwapPartitionSource,
			check: func(t *testing.T, s string) {
				if strings.HasSuffix(s, "\n") {
					t.Errorf("script ends with a newline; the seed's does not")
				}
				if !strings.HasPrefix(s, "#!/usr/bin/env bash\n") || !strings.HasSuffix(s, "touch /var/tmp/swapfile") {
					t.Errorf("unexpected script:\n%s", s)
				}
			},
		},
		{
			// Not the seed 004 drop-in: that one lacks failSwapOn: false,
			// without which the kubelet refuses a node with swap on.
			path: "/etc/openshift/kubelet.conf.d/90-swap.conf", mode: 420,
			check: func(t *testing.T, s string) {
				if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
					t.Errorf("kubelet config must end with exactly one newline: %q", s)
				}
				var kc kubeletconfigv1beta1.KubeletConfiguration
				if err := yaml.UnmarshalStrict([]byte(s), &kc); err != nil {
					t.Fatalf("not a KubeletConfiguration: %v\n%s", err, s)
				}
				if kc.Kind != "KubeletConfiguration" || kc.APIVersion != "kubelet.config.k8s.io/v1beta1" {
					t.Errorf("apiVersion/kind = %s/%s", kc.APIVersion, kc.Kind)
				}
				if kc.FailSwapOn == nil || *kc.FailSwapOn {
					t.Errorf("failSwapOn = %v, want false", kc.FailSwapOn)
				}
				if kc.MemorySwap.SwapBehavior != "LimitedSwap" {
					t.Errorf("memorySwap.swapBehavior = %q, want LimitedSwap", kc.MemorySwap.SwapBehavior)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := files[i].(map[string]interface{})
			if f["path"] != tt.path {
				t.Fatalf("files[%d].path = %v, want %s", i, f["path"], tt.path)
			}
			if f["mode"] != tt.mode {
				t.Errorf("mode = %#v, want int64(%d)", f["mode"], tt.mode)
			}
			if f["overwrite"] != true {
				t.Errorf("overwrite = %#v, want true", f["overwrite"])
			}
			source, _, _ := unstructured.NestedString(f, "contents", "source")
			if tt.wantSource != "" && source != tt.wantSource {
				t.Errorf("contents.source =\n%s\nwant (seed 004)\n%s", source, tt.wantSource)
			}
			tt.check(t, decodeSource(t, source))
		})
	}

	if v, _, _ := unstructured.NestedString(mc.Object, "spec", "config", "ignition", "version"); v != "3.2.0" {
		t.Errorf("ignition.version = %q, want 3.2.0", v)
	}
}

func TestSwapUnits(t *testing.T) {
	mc := items(t, defaults())[0].Desired
	units := mustSlice(t, mc.Object, "spec", "config", "systemd", "units")
	if len(units) != 2 {
		t.Fatalf("units = %d, want 2", len(units))
	}
	tests := []struct {
		name  string
		lines []string
	}{
		{"swap-provision.service", []string{
			"[Unit]",
			"ConditionFirstBoot=no",
			"ConditionPathExists=!/var/tmp/swapfile",
			"[Service]",
			"Type=oneshot",
			"ExecStart=/etc/find-swap-partition",
			"[Install]",
			"WantedBy=multi-user.target",
			"RequiredBy=kubelet-dependencies.target",
		}},
		{"cgroup-system-slice-config.service", []string{
			"[Unit]",
			"[Service]",
			"Type=oneshot",
			`ExecStart=/bin/sh -c "sudo systemctl set-property --runtime system.slice MemorySwapMax=0 IODeviceLatencyTargetSec=\"/ 50ms\""`,
			"[Install]",
			"RequiredBy=kubelet-dependencies.target",
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := units[i].(map[string]interface{})
			if u["name"] != tt.name {
				t.Fatalf("units[%d].name = %v, want %s", i, u["name"], tt.name)
			}
			if u["enabled"] != true {
				t.Errorf("enabled = %#v, want true", u["enabled"])
			}
			contents, _ := u["contents"].(string)
			if !strings.HasSuffix(contents, "\n") {
				t.Errorf("contents do not end with a newline: %q", contents)
			}
			have := map[string]bool{}
			for _, l := range strings.Split(contents, "\n") {
				have[l] = true
			}
			for _, l := range tt.lines {
				if !have[l] {
					t.Errorf("missing line %q in\n%s", l, contents)
				}
			}
		})
	}
}

func TestItems(t *testing.T) {
	selector := &metav1.LabelSelector{
		MatchLabels: map[string]string{"ksm": "on"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
		},
	}
	tests := []struct {
		name string
		opts *v1alpha1.VirtHigherDensityConfig

		wantSwapAbsent bool
		wantRatio      int64
		wantKSM        map[string]interface{} // nodeLabelSelector; nil: no ksmConfiguration
		wantHCOMessage string
	}{
		{
			name:           "defaults",
			opts:           defaults(),
			wantRatio:      150,
			wantKSM:        map[string]interface{}{},
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=150 and KSM enabled",
		},
		{
			name:           "ratio 200",
			opts:           &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](200)},
			wantRatio:      200,
			wantKSM:        map[string]interface{}{},
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=200 and KSM enabled",
		},
		{
			name: "KSM enabled with an empty selector",
			opts: &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](150),
				KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: ptr.To(true), NodeLabelSelector: &metav1.LabelSelector{}}},
			wantRatio:      150,
			wantKSM:        map[string]interface{}{},
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=150 and KSM enabled",
		},
		{
			name: "KSM selector",
			opts: &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](150),
				KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: ptr.To(true), NodeLabelSelector: selector}},
			wantRatio: 150,
			wantKSM: map[string]interface{}{
				"matchLabels": map[string]interface{}{"ksm": "on"},
				"matchExpressions": []interface{}{
					map[string]interface{}{"key": "zone", "operator": "In", "values": []interface{}{"a", "b"}},
				},
			},
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=150 and KSM enabled",
		},
		{
			name: "KSM disabled",
			opts: &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](150),
				KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: ptr.To(false), NodeLabelSelector: selector}},
			wantRatio:      150,
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=150",
		},
		{
			name:           "swap off",
			opts:           &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](120)},
			wantSwapAbsent: true,
			wantRatio:      120,
			wantKSM:        map[string]interface{}{},
			wantHCOMessage: "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=120 and KSM enabled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := items(t, tt.opts)

			// enable-kubelet-swap
			swap := got[0]
			mc := swap.Desired
			if mc.GetAPIVersion() != "machineconfiguration.openshift.io/v1" || mc.GetKind() != "MachineConfig" ||
				mc.GetName() != "90-worker-kubelet-swap" || mc.GetNamespace() != "" {
				t.Errorf("swap identity = %s %s %s/%s", mc.GetAPIVersion(), mc.GetKind(), mc.GetNamespace(), mc.GetName())
			}
			wantLabels := map[string]string{
				"machineconfiguration.openshift.io/role": "worker",
				"advisor.kubevirt.io/managed-by":         configName,
			}
			if !reflect.DeepEqual(mc.GetLabels(), wantLabels) {
				t.Errorf("swap labels = %v, want %v", mc.GetLabels(), wantLabels)
			}
			if !swap.Owned || swap.Absent != tt.wantSwapAbsent || swap.Impact != v1alpha1.ImpactHigh {
				t.Errorf("swap Owned=%v Absent=%v Impact=%s, want true %v High", swap.Owned, swap.Absent, swap.Impact, tt.wantSwapAbsent)
			}
			_, hasSpec := mc.Object["spec"]
			if tt.wantSwapAbsent {
				if swap.Message != "MachineConfig '90-worker-kubelet-swap' will be removed: swap is disabled" {
					t.Errorf("swap message = %q", swap.Message)
				}
				if hasSpec || len(swap.ManagedFields) != 0 {
					t.Errorf("absent item carries spec=%v managedFields=%v", hasSpec, swap.ManagedFields)
				}
			} else {
				if swap.Message != "MachineConfig '90-worker-kubelet-swap' will be configured to enable kubelet swap" {
					t.Errorf("swap message = %q", swap.Message)
				}
				if !hasSpec || !reflect.DeepEqual(swap.ManagedFields, []string{"spec.config"}) {
					t.Errorf("swap spec=%v managedFields=%v, want spec and [spec.config]", hasSpec, swap.ManagedFields)
				}
			}

			// configure-higher-density
			hco := got[1]
			h := hco.Desired
			if h.GetAPIVersion() != "hco.kubevirt.io/v1beta1" || h.GetKind() != "HyperConverged" ||
				h.GetNamespace() != "openshift-cnv" || h.GetName() != "kubevirt-hyperconverged" {
				t.Errorf("hco identity = %s %s %s/%s", h.GetAPIVersion(), h.GetKind(), h.GetNamespace(), h.GetName())
			}
			if hco.Owned || hco.Absent || hco.Impact != v1alpha1.ImpactMedium || len(h.GetLabels()) != 0 {
				t.Errorf("hco Owned=%v Absent=%v Impact=%s labels=%v, want false false Medium none", hco.Owned, hco.Absent, hco.Impact, h.GetLabels())
			}
			if msg, _, _ := strings.Cut(hco.Message, ". Swap coverage: "); msg != tt.wantHCOMessage {
				t.Errorf("hco message = %q, want %q", hco.Message, tt.wantHCOMessage)
			}
			ratio, ok, err := unstructured.NestedFieldNoCopy(h.Object, "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")
			if err != nil || !ok || ratio != tt.wantRatio {
				t.Errorf("memoryOvercommitPercentage = %#v (found=%v, err=%v), want int64(%d)", ratio, ok, err, tt.wantRatio)
			}
			wantSpec := map[string]interface{}{
				"higherWorkloadDensity": map[string]interface{}{"memoryOvercommitPercentage": tt.wantRatio},
			}
			wantManaged := []string{"spec.higherWorkloadDensity.memoryOvercommitPercentage"}
			if tt.wantKSM != nil {
				wantSpec["ksmConfiguration"] = map[string]interface{}{"nodeLabelSelector": tt.wantKSM}
				wantManaged = append(wantManaged, "spec.ksmConfiguration")
			}
			if !reflect.DeepEqual(h.Object["spec"], wantSpec) {
				t.Errorf("hco spec = %#v, want %#v", h.Object["spec"], wantSpec)
			}
			if !reflect.DeepEqual(hco.ManagedFields, wantManaged) {
				t.Errorf("hco managedFields = %v, want %v", hco.ManagedFields, wantManaged)
			}
		})
	}
}

// Each call builds fresh objects: changing one plan must not change the next.
func TestItemsAreIndependent(t *testing.T) {
	first := items(t, defaults())
	first[0].Desired.Object["spec"].(map[string]interface{})["config"].(map[string]interface{})["ignition"] = "changed"
	second := items(t, defaults())
	if v, _, _ := unstructured.NestedString(second[0].Desired.Object, "spec", "config", "ignition", "version"); v != "3.2.0" {
		t.Errorf("second call sees the first call's change: ignition.version = %q", v)
	}
}

func TestHCOItemThroughV1(t *testing.T) {
	hco := itemsIn(t, cluster{hcoVersion: "v1"}, &v1alpha1.VirtHigherDensityConfig{
		KSMConfiguration: &v1alpha1.KSMConfiguration{NodeLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ksm": "on"}}},
	})[1]
	if got := hco.Desired.GetAPIVersion(); got != "hco.kubevirt.io/v1" {
		t.Errorf("apiVersion = %s, want hco.kubevirt.io/v1", got)
	}
	ratio, _, _ := unstructured.NestedFieldNoCopy(hco.Desired.Object, "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
	if ratio != int64(150) {
		t.Errorf("spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage = %#v, want 150", ratio)
	}
	sel, _, _ := unstructured.NestedStringMap(hco.Desired.Object, "spec", "virtualization", "ksmConfiguration", "nodeLabelSelector", "matchLabels")
	if !reflect.DeepEqual(sel, map[string]string{"ksm": "on"}) {
		t.Errorf("ksm selector = %v", sel)
	}
	if _, found := hco.Desired.Object["spec"].(map[string]interface{})["higherWorkloadDensity"]; found {
		t.Errorf("v1 desired state carries the v1beta1 path: %v", hco.Desired.Object["spec"])
	}
	wantFields := []string{"spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage", "spec.virtualization.ksmConfiguration"}
	if !reflect.DeepEqual(hco.ManagedFields, wantFields) {
		t.Errorf("managedFields = %v, want %v", hco.ManagedFields, wantFields)
	}
	if !strings.HasPrefix(hco.Message, "HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1) will be configured with memoryOvercommitPercentage=150") || !hco.ShowVersion {
		t.Errorf("message = %q, ShowVersion = %v", hco.Message, hco.ShowVersion)
	}
}

func TestHCOItemUnknownVersion(t *testing.T) {
	_, err := New().Items(context.Background(), profiles.Inputs{ConfigName: configName, Cluster: cluster{hcoVersion: "v2"}})
	if err == nil || !strings.Contains(err.Error(), "HyperConverged v2 is not supported") {
		t.Errorf("err = %v", err)
	}
}

func pool(name string, mcSelector, nodeSelector map[string]interface{}) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"machineConfigSelector": mcSelector, "nodeSelector": nodeSelector},
	}}
}

func node(name, role, memory string, swap interface{}) unstructured.Unstructured {
	status := map[string]interface{}{"capacity": map[string]interface{}{"memory": memory}}
	if swap != nil {
		status["nodeInfo"] = map[string]interface{}{"swap": map[string]interface{}{"capacity": swap}}
	}
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"node-role.kubernetes.io/" + role: ""}},
		"status":   status,
	}}
}

func TestSwapCoverage(t *testing.T) {
	const gi = int64(1) << 30
	worker := pool("worker", map[string]interface{}{"matchLabels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
		map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}})
	cnv := pool("worker-cnv", map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": []interface{}{"worker", "worker-cnv"}}}},
		map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/worker-cnv": ""}})
	master := pool("master", map[string]interface{}{"matchLabels": map[string]interface{}{"machineconfiguration.openshift.io/role": "master"}},
		map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/master": ""}})
	tests := []struct {
		name         string
		ratio        int32
		pools        []unstructured.Unstructured
		nodes        []unstructured.Unstructured
		wantMessage  []string
		wantWarnings int
	}{
		{"2 GiB short of 4 GiB", 150, []unstructured.Unstructured{worker, master},
			[]unstructured.Unstructured{node("w1", "worker", "8Gi", 2*gi), node("m1", "master", "8Gi", nil)},
			[]string{"WARNING: swap in MachineConfigPool 'worker' does not cover memoryToRequestRatio 150: node 'w1' has 2 GiB of swap, 4 GiB needed (8 GiB of memory)"}, 1},
		{"4 GiB covers 150", 150, []unstructured.Unstructured{worker},
			[]unstructured.Unstructured{node("w1", "worker", "8Gi", 4*gi), node("w2", "worker", "8Gi", float64(5*gi))},
			[]string{"swap in MachineConfigPool 'worker' covers memoryToRequestRatio 150 on all 2 nodes"}, 0},
		{"no swap reported", 150, []unstructured.Unstructured{worker},
			[]unstructured.Unstructured{node("w1", "worker", "8Gi", nil)},
			[]string{"cannot verify MachineConfigPool 'worker': 1 of 1 nodes report no swap"}, 0},
		{"every selecting pool, by matchExpressions", 200, []unstructured.Unstructured{cnv, worker},
			[]unstructured.Unstructured{node("w1", "worker", "8Gi", 8*gi), node("c1", "worker-cnv", "16Gi", 8*gi)},
			[]string{"covers memoryToRequestRatio 200 on all 1 nodes", "'worker-cnv' does not cover memoryToRequestRatio 200: node 'c1' has 8 GiB of swap, 16 GiB needed"}, 1},
		{"a pool without nodes", 150, []unstructured.Unstructured{worker}, nil,
			[]string{"cannot verify MachineConfigPool 'worker': no Node matches its nodeSelector"}, 0},
		{"no pool", 150, nil, nil, []string{"cannot verify, no MachineConfigPool selects the swap MachineConfig"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := cluster{hcoVersion: "v1beta1", lists: map[string][]unstructured.Unstructured{"MachineConfigPool": tt.pools, "Node": tt.nodes}}
			hco := checked(itemsIn(t, cl, &v1alpha1.VirtHigherDensityConfig{MemoryToRequestRatio: ptr.To(tt.ratio)})[1])
			for _, want := range tt.wantMessage {
				if !strings.Contains(hco.Message, want) {
					t.Errorf("message %q lacks %q", hco.Message, want)
				}
			}
			if len(hco.Warnings) != tt.wantWarnings {
				t.Errorf("warnings = %q, want %d", hco.Warnings, tt.wantWarnings)
			}
			if hco.Impact != v1alpha1.ImpactMedium {
				t.Errorf("impact = %s: a warning must not change it", hco.Impact)
			}
		})
	}
}

func TestSwapCoverageNeverBlocks(t *testing.T) {
	cl := cluster{hcoVersion: "v1beta1", listErr: errors.New(`nodes is forbidden`)}
	hco := checked(itemsIn(t, cl, nil)[1])
	if !strings.HasSuffix(hco.Message, "Swap coverage: cannot verify: nodes is forbidden") || hco.Err != nil {
		t.Errorf("message %q err %v", hco.Message, hco.Err)
	}
}

func TestNoSwapCoverageWithoutSwap(t *testing.T) {
	hco := items(t, &v1alpha1.VirtHigherDensityConfig{EnableSwap: ptr.To(false)})[1]
	if strings.Contains(hco.Message, "Swap coverage") || hco.Warnings != nil || hco.Check != nil {
		t.Errorf("message %q / warnings %q: nothing to cover without overcommit", hco.Message, hco.Warnings)
	}
}

// checked adds an item's check to it, as the plan does.
func checked(it profiles.Item) profiles.Item {
	if it.Check != nil {
		sentence, warnings := it.Check(context.Background())
		it.Message += ". " + sentence
		it.Warnings = append(it.Warnings, warnings...)
	}
	return it
}

// TestWritesHoldTheDefaults: memoryOvercommitPercentage, over the
// defaults and the extremes of memoryToRequestRatio, stays within Writes
// (the admission policy of artifacts/deploy pins it there).
func TestWritesHoldTheDefaults(t *testing.T) {
	w := Writes()
	for _, c := range []*v1alpha1.VirtHigherDensityConfig{
		nil,
		{EnableSwap: ptr.To(true)},
		{EnableSwap: ptr.To(false)},
		{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To(w.Min)},
		{EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To(w.Max)},
	} {
		it, err := hcoItem(resolve(c), kubevirt.HCOVersionV1beta1)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedInt64(it.Desired.Object, "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")
		if !w.Contains(int32(got)) {
			t.Errorf("options %+v: memoryOvercommitPercentage %d outside %+v", c, got, w)
		}
	}
}

// The kernel tunings: off by default (deletion requests only), on when
// asked for, zero pages never without KSM, and the MachineConfig API
// needed as soon as one is on.
func TestKernelTunings(t *testing.T) {
	on, off := ptr.To(true), ptr.To(false)
	tests := []struct {
		name        string
		opts        *v1alpha1.VirtHigherDensityConfig
		ksm, thp    bool
		needsMCWith bool // with swap off: the MachineConfig API is a prerequisite
	}{
		{"defaults: neither", defaults(), false, false, false},
		{"unresolved options: neither", nil, false, false, false},
		{"zero pages with KSM on", &v1alpha1.VirtHigherDensityConfig{KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: on, UseZeroPages: on}}, true, false, true},
		{"zero pages with KSM on by default", &v1alpha1.VirtHigherDensityConfig{KSMConfiguration: &v1alpha1.KSMConfiguration{UseZeroPages: on}}, true, false, true},
		{"zero pages asked for without KSM: never written", &v1alpha1.VirtHigherDensityConfig{KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: off, UseZeroPages: on}}, false, false, false},
		{"zero pages off", &v1alpha1.VirtHigherDensityConfig{KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: on, UseZeroPages: off}}, false, false, false},
		{"THP madvise", &v1alpha1.VirtHigherDensityConfig{THPMadvise: on}, false, true, true},
		{"THP madvise with KSM off", &v1alpha1.VirtHigherDensityConfig{THPMadvise: on, KSMConfiguration: &v1alpha1.KSMConfiguration{Enabled: off}}, false, true, true},
		{"both", &v1alpha1.VirtHigherDensityConfig{THPMadvise: on, KSMConfiguration: &v1alpha1.KSMConfiguration{UseZeroPages: on}}, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := items(t, tt.opts)
			ksm, thp := got[2], got[3]
			checkTuning(t, ksm, tt.ksm, "90-worker-ksm-zero-pages", "spec.config")
			checkTuning(t, thp, tt.thp, "90-worker-thp-madvise", "spec.kernelArguments")
			if tt.ksm {
				units, _, _ := unstructured.NestedSlice(ksm.Desired.Object, "spec", "config", "systemd", "units")
				if len(units) != 1 || !strings.Contains(units[0].(map[string]interface{})["contents"].(string), `echo 1 > /sys/kernel/mm/ksm/use_zero_pages`) {
					t.Errorf("KSM units %v do not set use_zero_pages", units)
				}
				if v, _, _ := unstructured.NestedString(ksm.Desired.Object, "spec", "config", "ignition", "version"); v != ignitionVersion {
					t.Errorf("KSM Ignition version %q", v)
				}
			}
			if tt.thp {
				args, _, _ := unstructured.NestedStringSlice(thp.Desired.Object, "spec", "kernelArguments")
				if !reflect.DeepEqual(args, []string{"transparent_hugepage=madvise"}) {
					t.Errorf("THP kernel arguments %v", args)
				}
			}
			// Swap off: the MachineConfig API is needed only for a tuning.
			swapOff := tt.opts.DeepCopy()
			if swapOff == nil {
				swapOff = &v1alpha1.VirtHigherDensityConfig{}
			}
			swapOff.EnableSwap = off
			pre := New().Prerequisites(v1alpha1.ProfileOptions{VirtHigherDensity: swapOff})
			if needs := pre[0].GVK == machineconfig.MachineConfigGVK; needs != tt.needsMCWith {
				t.Errorf("with swap off, MachineConfig prerequisite = %v, want %v (%v)", needs, tt.needsMCWith, pre)
			}
		})
	}
}

func checkTuning(t *testing.T, it profiles.Item, on bool, name, field string) {
	t.Helper()
	if it.Desired.GetName() != name || !it.Owned || it.Impact != v1alpha1.ImpactHigh {
		t.Errorf("%s: name %q owned %v impact %v", it.Name, it.Desired.GetName(), it.Owned, it.Impact)
	}
	if got := it.Desired.GetLabels(); got[machineconfig.RoleLabel] != "worker" || got[profiles.ManagedByLabel] != configName {
		t.Errorf("%s: labels %v", it.Name, got)
	}
	if it.Absent == on {
		t.Errorf("%s: Absent = %v with the option %v", it.Name, it.Absent, on)
	}
	if on && (!reflect.DeepEqual(it.ManagedFields, []string{field}) || !strings.Contains(it.Message, "reboot one by one")) {
		t.Errorf("%s: managed %v, message %q", it.Name, it.ManagedFields, it.Message)
	}
	if !on && (it.ManagedFields != nil || it.Desired.Object["spec"] != nil || !strings.Contains(it.Message, "will be removed")) {
		t.Errorf("%s off: managed %v, spec %v, message %q", it.Name, it.ManagedFields, it.Desired.Object["spec"], it.Message)
	}
}
