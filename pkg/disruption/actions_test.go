package disruption

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func file(path, data string) interface{} {
	return map[string]interface{}{"path": path, "contents": map[string]interface{}{"source": "data:," + data}, "mode": int64(420)}
}

func unit(name, contents string) interface{} {
	return map[string]interface{}{"name": name, "contents": contents, "enabled": true}
}

func mcSpec(fields map[string]interface{}, files, units []interface{}) map[string]interface{} {
	spec := map[string]interface{}{"config": map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}}
	for k, v := range fields {
		spec[k] = v
	}
	config := spec["config"].(map[string]interface{})
	if files != nil {
		config["storage"] = map[string]interface{}{"files": files}
	}
	if units != nil {
		config["systemd"] = map[string]interface{}{"units": units}
	}
	return spec
}

func policiesObject(generation, observed int64, files, units []interface{}, ssh []interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]interface{}{"name": "cluster", "generation": generation},
		"status": map[string]interface{}{"observedGeneration": observed, "nodeDisruptionPolicyStatus": map[string]interface{}{
			"clusterPolicies": map[string]interface{}{"files": files, "units": units, "sshkey": map[string]interface{}{"actions": ssh}}}},
	}}
	return u
}

func actions(types ...string) []interface{} {
	var out []interface{}
	for _, t := range types {
		a := map[string]interface{}{"type": t}
		switch t {
		case "Reload":
			a["reload"] = map[string]interface{}{"serviceName": "crio.service"}
		case "Restart":
			a["restart"] = map[string]interface{}{"serviceName": "kubelet.service"}
		}
		out = append(out, a)
	}
	return out
}

func TestReadPolicies(t *testing.T) {
	files := []interface{}{map[string]interface{}{"path": "/etc/a", "actions": actions("Reload")}}
	units := []interface{}{map[string]interface{}{"name": "x.service", "actions": actions("DaemonReload", "Restart")}}
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		why     string
		files   int
		unitAct string
	}{
		{"none", nil, "there is no MachineConfiguration 'cluster'", 0, ""},
		{"not current", policiesObject(3, 2, files, units, actions("None")), "not current (observedGeneration 2, generation 3)", 0, ""},
		{"current", policiesObject(3, 3, files, units, actions("None")), "", 1, "DaemonReload, Restart kubelet.service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, why := ReadPolicies(tc.obj)
			if tc.why != "" {
				if p != nil || !strings.Contains(why, tc.why) {
					t.Fatalf("ReadPolicies = %+v, %q; want none because %q", p, why, tc.why)
				}
				return
			}
			if p == nil || len(p.Files) != tc.files {
				t.Fatalf("ReadPolicies = %+v, %q", p, why)
			}
			var got []string
			for _, a := range p.Units["x.service"] {
				got = append(got, a.String())
			}
			if strings.Join(got, ", ") != tc.unitAct {
				t.Errorf("unit actions %v, want %s", got, tc.unitAct)
			}
		})
	}
	noStatus := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "cluster"}}}
	if p, why := ReadPolicies(noStatus); p != nil || !strings.Contains(why, "no status.nodeDisruptionPolicyStatus") {
		t.Errorf("no status: %+v, %q", p, why)
	}
}

// The swap drop-in's files and units of virt-higher-density.
var (
	swapFiles = []interface{}{file("/etc/find-swap-partition", "script"), file("/etc/openshift/kubelet.conf.d/90-swap.conf", "conf")}
	swapUnits = []interface{}{unit("swap-provision.service", "u1"), unit("cgroup-system-slice-config.service", "u2")}
)

func policyFor(t *testing.T, files, units []interface{}, ssh []interface{}) *Policies {
	t.Helper()
	p, why := ReadPolicies(policiesObject(1, 1, files, units, ssh))
	if p == nil {
		t.Fatal(why)
	}
	return p
}

func TestDecide(t *testing.T) {
	swapNone := policyFor(t,
		[]interface{}{
			map[string]interface{}{"path": "/etc/find-swap-partition", "actions": actions("None")},
			map[string]interface{}{"path": "/etc/openshift/kubelet.conf.d", "actions": actions("None")},
		},
		[]interface{}{
			map[string]interface{}{"name": "swap-provision.service", "actions": actions("None")},
			map[string]interface{}{"name": "cgroup-system-slice-config.service", "actions": actions("None")},
		}, actions("None"))
	mixed := policyFor(t,
		[]interface{}{
			map[string]interface{}{"path": "/etc", "actions": actions("Drain")},
			map[string]interface{}{"path": "/etc/containers/registries.conf", "actions": actions("Special")},
			map[string]interface{}{"path": "/etc/crio", "actions": actions("Reload")},
			map[string]interface{}{"path": "/etc/crio/crio.conf.d/99-x", "actions": actions("Restart")},
			map[string]interface{}{"path": "/etc/kube", "actions": actions("DaemonReload")},
		},
		[]interface{}{map[string]interface{}{"name": "a.service", "actions": actions("Reboot")}}, actions("None"))
	psi := map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}
	tests := []struct {
		name          string
		before, after map[string]interface{}
		policies      *Policies
		want          v1alpha1.NodeDisruption
		reason        string
	}{
		{"create with kernel arguments: reboot, whatever the policies", nil, mcSpec(psi, nil, nil), swapNone, v1alpha1.NodeDisruptionReboot, "kernelArguments changed"},
		{"delete with kernel arguments", mcSpec(psi, nil, nil), nil, swapNone, v1alpha1.NodeDisruptionReboot, "kernelArguments changed"},
		{"extensions", nil, mcSpec(map[string]interface{}{"extensions": []interface{}{"usbguard"}}, nil, nil), nil, v1alpha1.NodeDisruptionReboot, "extensions"},
		{"kernelType", mcSpec(nil, nil, nil), mcSpec(map[string]interface{}{"kernelType": "realtime"}, nil, nil), nil, v1alpha1.NodeDisruptionReboot, "kernelType"},
		{"kernelType default is unset", mcSpec(nil, nil, nil), mcSpec(map[string]interface{}{"kernelType": "default"}, nil, nil), nil, v1alpha1.NodeDisruptionNone, "no file"},
		{"fips", nil, mcSpec(map[string]interface{}{"fips": true}, nil, nil), nil, v1alpha1.NodeDisruptionReboot, "fips"},
		{"fips false is unset", nil, mcSpec(map[string]interface{}{"fips": false}, nil, nil), nil, v1alpha1.NodeDisruptionNone, ""},
		{"osImageURL", nil, mcSpec(map[string]interface{}{"osImageURL": "quay.io/x"}, nil, nil), nil, v1alpha1.NodeDisruptionReboot, "osImageURL"},
		{"same kernel arguments, int and float alike: nothing", mcSpec(psi, nil, nil), mcSpec(map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}, nil, nil), nil, v1alpha1.NodeDisruptionNone, ""},
		{"swap without policies: reboot", nil, mcSpec(nil, swapFiles, swapUnits), nil, v1alpha1.NodeDisruptionReboot, "files or units change and no policies"},
		{"swap with None for its paths and units: None", nil, mcSpec(nil, swapFiles, swapUnits), swapNone, v1alpha1.NodeDisruptionNone,
			"node disruption policies: None for /etc/find-swap-partition, /etc/openshift/kubelet.conf.d/90-swap.conf, cgroup-system-slice-config.service, swap-provision.service"},
		{"swap deleted, same policies: None", mcSpec(nil, swapFiles, swapUnits), nil, swapNone, v1alpha1.NodeDisruptionNone, "None for"},
		{"a file without a policy reboots", nil, mcSpec(nil, []interface{}{file("/var/x", "1")}, nil), swapNone, v1alpha1.NodeDisruptionReboot, "file /var/x changes and no node disruption policy covers it"},
		{"a unit without a policy reboots", nil, mcSpec(nil, nil, []interface{}{unit("other.service", "x")}), swapNone, v1alpha1.NodeDisruptionReboot, "unit other.service"},
		{"a changed file content", mcSpec(nil, []interface{}{file("/etc/crio/a", "1")}, nil), mcSpec(nil, []interface{}{file("/etc/crio/a", "2")}, nil), mixed, v1alpha1.NodeDisruptionReload, "Reload crio.service for /etc/crio/a"},
		{"an unchanged file: nothing", mcSpec(nil, []interface{}{file("/etc/crio/a", "1")}, nil), mcSpec(nil, []interface{}{file("/etc/crio/a", "1")}, nil), mixed, v1alpha1.NodeDisruptionNone, ""},
		{"the closest directory wins", nil, mcSpec(nil, []interface{}{file("/etc/crio/crio.conf.d/99-x", "1")}, nil), mixed, v1alpha1.NodeDisruptionRestart, "Restart kubelet.service for /etc/crio/crio.conf.d/99-x"},
		{"a parent directory policy", nil, mcSpec(nil, []interface{}{file("/etc/other", "1")}, nil), mixed, v1alpha1.NodeDisruptionDrain, "Drain for /etc/other"},
		{"a path prefix is no directory", nil, mcSpec(nil, []interface{}{file("/etc/kubelet", "1")}, nil), mixed, v1alpha1.NodeDisruptionDrain, "Drain for /etc/kubelet"},
		{"Special counts as a drain", nil, mcSpec(nil, []interface{}{file("/etc/containers/registries.conf", "1")}, nil), mixed, v1alpha1.NodeDisruptionDrain, "Special for /etc/containers/registries.conf"},
		{"the strongest action wins", nil, mcSpec(nil, []interface{}{file("/etc/kube/a", "1"), file("/etc/crio/b", "1")}, nil), mixed, v1alpha1.NodeDisruptionReload, "DaemonReload for /etc/kube/a; Reload crio.service for /etc/crio/b"},
		{"a unit policy of Reboot", nil, mcSpec(nil, nil, []interface{}{unit("a.service", "x")}), mixed, v1alpha1.NodeDisruptionReboot, "Reboot for a.service"},
		{"SSH keys alone without policies: applied in place", nil, mcSpec(map[string]interface{}{}, nil, nil), nil, v1alpha1.NodeDisruptionNone, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := "no policies"
			d := Decide(tc.before, tc.after, tc.policies, why)
			if d.Action != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Decide = %s (%q), want %s (containing %q)", d.Action, d.Reason, tc.want, tc.reason)
			}
		})
	}

	ssh := mcSpec(nil, nil, nil)
	ssh["config"].(map[string]interface{})["passwd"] = map[string]interface{}{"users": []interface{}{map[string]interface{}{"name": "core", "sshAuthorizedKeys": []interface{}{"ssh-ed25519 A"}}}}
	if d := Decide(nil, ssh, nil, "none"); d.Action != v1alpha1.NodeDisruptionNone {
		t.Errorf("an SSH key change without policies: %+v", d)
	}
	if d := Decide(nil, ssh, policyFor(t, nil, nil, actions("Drain")), ""); d.Action != v1alpha1.NodeDisruptionDrain || !strings.Contains(d.Reason, "Drain for SSH keys") {
		t.Errorf("an SSH key change with the sshkey policy Drain: %+v", d)
	}
}

func TestDrains(t *testing.T) {
	for a, want := range map[v1alpha1.NodeDisruption]bool{
		v1alpha1.NodeDisruptionReboot: true, v1alpha1.NodeDisruptionDrain: true,
		v1alpha1.NodeDisruptionRestart: false, v1alpha1.NodeDisruptionReload: false,
		v1alpha1.NodeDisruptionDaemonReload: false, v1alpha1.NodeDisruptionNone: false,
	} {
		if Drains(a) != want {
			t.Errorf("Drains(%s) = %t", a, !want)
		}
	}
}
