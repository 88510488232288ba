package advisor

import (
	"bytes"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
)

func TestPlanExitCode(t *testing.T) {
	item := func(op v1alpha1.Operation, err string) v1alpha1.PlanItem {
		return v1alpha1.PlanItem{Name: "i", Operation: op, Error: err}
	}
	for _, tc := range []struct {
		name   string
		status v1alpha1.PlanStatus
		want   int
	}{
		{"no items", v1alpha1.PlanStatus{}, 0},
		{"all None", v1alpha1.PlanStatus{Items: []v1alpha1.PlanItem{item("None", ""), item("None", "")}}, 0},
		{"one Update", v1alpha1.PlanStatus{Items: []v1alpha1.PlanItem{item("None", ""), item("Update", "")}}, 1},
		{"Create", v1alpha1.PlanStatus{Items: []v1alpha1.PlanItem{item("Create", "")}}, 1},
		{"Delete", v1alpha1.PlanStatus{Items: []v1alpha1.PlanItem{item("Delete", "")}}, 1},
		{"an item error", v1alpha1.PlanStatus{Items: []v1alpha1.PlanItem{item("", "dry-run rejected")}}, 1},
		{"a missing prerequisite", v1alpha1.PlanStatus{Prerequisites: []v1alpha1.Prerequisite{{Kind: "MachineConfig", Satisfied: false}}}, 1},
		{"satisfied prerequisites", v1alpha1.PlanStatus{Prerequisites: []v1alpha1.Prerequisite{{Kind: "ConfigMap", Satisfied: true}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planExitCode(&v1alpha1.Plan{Status: tc.status}); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlanCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		plan     *v1alpha1.Plan
		err      error
		args     []string
		code     int
		stdout   []string
		stderr   string
		noStdout []string
	}{
		{name: "changes exit 1", plan: configMapPlan(v1alpha1.OperationCreate), code: 1, stdout: []string{
			"Plan abababababab for example-profile (generation 2), impact Low\n",
			"[1/1] configure-example-component: Create ConfigMap openshift-cnv/example-config, impact Low\n",
			"      ConfigMap 'example-config' will be configured\n",
			"--- /dev/null\n+++ example-config (ConfigMap)\n@@ -0,0 +1,2 @@\n+data:\n+  example-key: example-value\n",
			"\nreboots: none\n1 of 1 items change something.\n",
		}},
		{name: "no changes exit 0 and show no diff", plan: configMapPlan(v1alpha1.OperationNone), code: 0,
			stdout:   []string{"[1/1] configure-example-component: None ConfigMap openshift-cnv/example-config", "0 of 1 items change something."},
			noStdout: []string{"(no changes)", "\x1b["}},
		{name: "unknown name exits 2 with one line", err: apierrors.NewNotFound(v1alpha1.Resource("virtplatformconfigs"), "nope"), code: 2,
			stderr: "Error: virtplatformconfigs.advisor.kubevirt.io \"nope\" not found (kubectl advisor status lists the configs)\n"},
		{name: "no name exits 2", args: []string{"plan"}, code: 2,
			stderr: "Error: give the name of one VirtPlatformConfig: kubectl advisor plan NAME (kubectl advisor status lists them)\n"},
		{name: "yaml passthrough keeps the exit code", plan: configMapPlan(v1alpha1.OperationUpdate), args: []string{"plan", "example-profile", "-o", "yaml"}, code: 1,
			stdout: []string{"apiVersion: advisor.kubevirt.io/v1alpha1\nkind: Plan\n", "planHash: " + strings.Repeat("ab", 32)}, noStdout: []string{"reboots:"}},
		{name: "json passthrough", plan: configMapPlan(v1alpha1.OperationNone), args: []string{"plan", "example-profile", "-o", "json"}, code: 0,
			stdout: []string{`"kind": "Plan"`, `"operation": "None"`}},
		{name: "unknown format", plan: configMapPlan(v1alpha1.OperationNone), args: []string{"plan", "example-profile", "-o", "wide"}, code: 2,
			stderr: "Error: unknown output format \"wide\": use -o yaml or -o json\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.servePlan(tc.plan, tc.err)
			args := tc.args
			if args == nil {
				args = []string{"plan", "example-profile"}
			}
			if code := h.run(t, "", args...); code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, h.err.String())
			}
			mustContain(t, "stdout", h.out.String(), tc.stdout...)
			for _, n := range tc.noStdout {
				if strings.Contains(h.out.String(), n) {
					t.Errorf("stdout contains %q:\n%s", n, h.out.String())
				}
			}
			if h.err.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", h.err.String(), tc.stderr)
			}
		})
	}
}

func TestPrintPlan(t *testing.T) {
	mc := v1alpha1.PlanItem{
		Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, ImpactSeverity: v1alpha1.ImpactHigh,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		Diff:      "--- /dev/null\n+++ 99-worker-psi-karg (MachineConfig)\n@@ -0,0 +1 @@\n+kernelArguments:\n-gone\n context\n\n",
	}
	failed := v1alpha1.PlanItem{Name: "enable-load-aware-descheduling", Error: "server-side apply dry-run of KubeDescheduler was rejected:\n field not declared",
		TargetRef: v1alpha1.ObjectReference{Kind: "KubeDescheduler", Namespace: "ns", Name: "cluster"}}
	p := &v1alpha1.Plan{Status: v1alpha1.PlanStatus{PlanHash: "0123456789abcdef", Items: []v1alpha1.PlanItem{mc, failed},
		Warnings: []string{"item 'enable-psi-metrics': draining the nodes would block on 1 VM: default/gpu-0"}}}
	p.Name = "load-aware-rebalancing"

	var plain bytes.Buffer
	printPlan(&plain, p, "pool worker, 3 nodes, once", false)
	mustContain(t, "plain", plain.String(),
		"\nwarning: item 'enable-psi-metrics': draining the nodes would block on 1 VM: default/gpu-0\nreboots: pool worker, 3 nodes, once\n",
		"Plan 0123456789ab for load-aware-rebalancing (generation 0), impact -\n",
		"[2/2] enable-load-aware-descheduling: ? KubeDescheduler ns/cluster, impact -\n",
		"      error: server-side apply dry-run of KubeDescheduler was rejected: field not declared\n",
		" context\n\n[2/2]", // the diff's trailing newlines are not printed as empty lines
		"reboots: pool worker, 3 nodes, once\n",
		"1 of 2 items change something, 1 could not be planned.\n")
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colour without a terminal:\n%q", plain.String())
	}

	var coloured bytes.Buffer
	printPlan(&coloured, p, "none", true)
	mustContain(t, "coloured", coloured.String(),
		"\x1b[1m--- /dev/null\x1b[0m\n", "\x1b[1m+++ 99-worker-psi-karg (MachineConfig)\x1b[0m\n", "\x1b[36m@@ -0,0 +1 @@\x1b[0m\n",
		"\x1b[32m+kernelArguments:\x1b[0m\n", "\x1b[31m-gone\x1b[0m\n", "\n context\n",
		"\x1b[1m[1/2] enable-psi-metrics: Create MachineConfig 99-worker-psi-karg, impact High\x1b[0m\n")

	missing := &v1alpha1.Plan{Status: v1alpha1.PlanStatus{Prerequisites: []v1alpha1.Prerequisite{
		{Kind: "MachineConfig", APIVersion: "machineconfiguration.openshift.io/v1", Description: "install the MachineConfig operator"}}}}
	var out bytes.Buffer
	printPlan(&out, missing, "none", false)
	mustContain(t, "missing prerequisites", out.String(), "Missing prerequisites: nothing can be planned until they are installed\n",
		"  MachineConfig machineconfiguration.openshift.io/v1: install the MachineConfig operator\n")
	if strings.Contains(out.String(), "No items") {
		t.Errorf("a plan with missing prerequisites is not 'nothing to change':\n%s", out.String())
	}
}

func TestPlanRebootSummary(t *testing.T) {
	mc := v1alpha1.PlanItem{Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate,
		TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)}}
	p := &v1alpha1.Plan{Status: v1alpha1.PlanStatus{PlanHash: "h", Items: []v1alpha1.PlanItem{mc}}}
	h := newHarness(t, machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 3, false), machineconfigtest.Pool("master", machineconfigtest.RoleSelector("master"), 3, 3, false))
	h.servePlan(p, nil)
	if code := h.run(t, "", "plan", "x"); code != 1 {
		t.Errorf("exit %d: %s", code, h.err.String())
	}
	mustContain(t, "stdout", h.out.String(), "\nreboots: pool worker, 3 nodes, once\n")
}

// The gates in force between node reboots follow the settings an
// approval approves, only when the plan rolls a pool (has gates).
func TestPrintPlanGates(t *testing.T) {
	settings := v1alpha1.PlanSettings{Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyAbort}
	const approves = "Approving it also approves action DryRun, failurePolicy Abort, bypassOptimisticLock false, waitTimeout none (waits without limit), allowBlockingDrains false\n"
	for _, tc := range []struct {
		name  string
		gates *v1alpha1.PlanGates
		want  string // the line after approves, "" for none
	}{
		{"no pool rolled: no gates", nil, ""},
		{"the defaults", &v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "0s"},
			"Gates between node reboots: node back within 20m0s, 0 failed migrations, soak 0s, no alert gate\n"},
		{"an alert gate", &v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "5m0s", MaxFailedMigrations: 1, Alerts: &v1alpha1.PlanAlertGate{
			Source: "Prometheus https://thanos-querier.openshift-monitoring.svc:9091", Matchers: []string{`severity="critical"`},
			Ignore: []string{"Watchdog", "InfoInhibitor"}, OnError: v1alpha1.GateErrorHold}},
			`Gates between node reboots: node back within 20m0s, 1 failed migration, soak 5m0s, alerts: Prometheus https://thanos-querier.openshift-monitoring.svc:9091 severity="critical" (ignoring Watchdog, InfoInhibitor; on error Hold)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings
			s.Gates = tc.gates
			p := &v1alpha1.Plan{Status: v1alpha1.PlanStatus{PlanHash: "h", Settings: s}}
			var b bytes.Buffer
			printPlan(&b, p, "pool worker, 3 nodes, once", false)
			mustContain(t, "plan", b.String(), approves+tc.want)
			if got := strings.Contains(b.String(), "Gates between node reboots"); got != (tc.want != "") {
				t.Errorf("gates shown: %t, want %t:\n%s", got, tc.want != "", b.String())
			}
		})
	}
}
