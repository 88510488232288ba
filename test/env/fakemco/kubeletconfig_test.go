package fakemco

import (
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRefusal(t *testing.T) {
	kc := func(kubelet map[string]any) map[string]any { return map[string]any{"kubeletConfig": kubelet} }
	tests := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"nothing set", map[string]any{}, ""},
		{"dedicated CPUs", kc(map[string]any{"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,32", "topologyManagerPolicy": "single-numa-node"}), ""},
		{"cgroupDriver", kc(map[string]any{"cgroupDriver": "cgroupfs"}), "KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs"},
		{"clusterDNS", kc(map[string]any{"clusterDNS": []any{"10.0.0.10"}}), "KubeletConfiguration: clusterDNS is not allowed to be set"},
		{"clusterDomain", kc(map[string]any{"clusterDomain": "example.com"}), "clusterDomain is not allowed"},
		{"featureGates", kc(map[string]any{"featureGates": map[string]any{"X": true}}), "featureGates is not allowed"},
		{"staticPodPath", kc(map[string]any{"staticPodPath": "/x"}), "staticPodPath is not allowed"},
		{"failSwapOn false is set too", kc(map[string]any{"failSwapOn": false}), "failSwapOn is not allowed to be set, but contains: false"},
		{"swapBehavior", kc(map[string]any{"memorySwap": map[string]any{"swapBehavior": "LimitedSwap"}}), "swapBehavior is not allowed"},
		{"systemReserved with autoSizingReserved", map[string]any{"autoSizingReserved": true, "kubeletConfig": map[string]any{"systemReserved": map[string]any{"memory": "2Gi"}}},
			"autoSizingReserved and systemdReserved cannot be set together"},
		{"systemReserved without autoSizingReserved", kc(map[string]any{"systemReserved": map[string]any{"memory": "2Gi"}}), ""},
		{"cgroups that differ", kc(map[string]any{"systemReservedCgroup": "/a", "systemCgroups": "/b"}), "systemReservedCgroup (/a) must match systemCgroups (/b)"},
		{"logLevel 0", map[string]any{"logLevel": int64(0)}, "LogLevel is not valid [1,10]"},
		{"logLevel 4", map[string]any{"logLevel": int64(4)}, ""},
	}
	for _, tt := range tests {
		got := refusal(tt.spec)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: refusal = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func namedKC(name string, suffix *string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}}}
	if suffix != nil {
		u.SetAnnotations(map[string]string{MCNameSuffixAnnotation: *suffix})
	}
	return u
}

func TestGeneratedName(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name    string
		kc      *unstructured.Unstructured
		ofPool  []*unstructured.Unstructured
		want    string
		wantErr string
	}{
		{"the only one", namedKC("a", nil), []*unstructured.Unstructured{namedKC("a", nil)}, "99-worker-cnv-generated-kubelet", ""},
		{"recorded without a suffix", namedKC("a", s("")), nil, "99-worker-cnv-generated-kubelet", ""},
		{"recorded with a suffix", namedKC("a", s("3")), nil, "99-worker-cnv-generated-kubelet-3", ""},
		{"a second one", namedKC("b", nil), []*unstructured.Unstructured{namedKC("a", s("")), namedKC("b", nil)}, "99-worker-cnv-generated-kubelet-1", ""},
		{"after the largest suffix", namedKC("c", nil), []*unstructured.Unstructured{namedKC("a", s("")), namedKC("b", s("4")), namedKC("c", nil)}, "99-worker-cnv-generated-kubelet-5", ""},
		{"the eleventh", namedKC("k", nil), []*unstructured.Unstructured{namedKC("a", s("")), namedKC("j", s("9")), namedKC("k", nil)}, "",
			"max number of supported kubelet config (10) has been reached"},
	}
	for _, tt := range tests {
		got, err := generatedName("worker-cnv", tt.kc, tt.ofPool)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: generatedName = %q, %v; want %q, %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPoolSelects(t *testing.T) {
	pool := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "worker-cnv",
		"labels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker-cnv": ""}}}}
	kc := func(sel map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigPoolSelector": sel}}}
	}
	tests := []struct {
		sel  map[string]any
		want bool
	}{
		{map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker-cnv": ""}}, true},
		{map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}, false},
		{map[string]any{}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got, err := poolSelects(kc(tt.sel), pool); got != tt.want || err != nil {
			t.Errorf("poolSelects(%v) = %v, %v; want %v", tt.sel, got, err, tt.want)
		}
	}
}

func TestRenderKubelet(t *testing.T) {
	config, err := renderKubelet(map[string]any{"kubeletConfig": map[string]any{"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,32"}})
	if err != nil {
		t.Fatal(err)
	}
	files, _, _ := unstructured.NestedSlice(config, "storage", "files")
	if len(files) != 1 {
		t.Fatalf("files: %v", files)
	}
	f := files[0].(map[string]any)
	source, _, _ := unstructured.NestedString(f, "contents", "source")
	body, _ := url.PathUnescape(strings.TrimPrefix(source, "data:,"))
	for _, want := range []string{`"cpuManagerPolicy":"static"`, `"reservedSystemCPUs":"0,32"`, `"systemReservedCgroup":""`, `"enforceNodeAllocatable":["pods"]`, `"maxPods":250`} {
		if f["path"] != kubeletConfFile || !strings.Contains(body, want) {
			t.Errorf("rendered %s %s lacks %s", f["path"], body, want)
		}
	}
}
