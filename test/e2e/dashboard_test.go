package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// kubectl advisor dashboard in a real headless Chromium (Debian's chromium
// package; `make e2e` installs it when missing) against this control plane.
// Screenshots of each page go to _output/e2e-artifacts; `make screenshots`
// also copies the README's into docs/images.

var screenshotsDir = flag.String("dashboard-screenshots", "", "also write the dashboard screenshots the docs use (docs/images/dashboard-*.png) into this directory")

// docScreenshots are the screenshots `make screenshots` checks in.
var docScreenshots = map[string]bool{"configs": true, "plan": true, "rollout-progress": true, "conflict": true, "halted": true}

// clusterReader lets the dashboard's users read what an OpenShift
// cluster-reader reads and the rollout page shows: pools, nodes and events.
const clusterReader = "dashboard-e2e-cluster-reader"

// dashboardUsers numbers the users of these specs: readable names in the
// screenshots, each new to the suite.
var dashboardUsers int

func dashboardUser(name string, roles ...string) (user, kubeconfig string) {
	GinkgoHelper()
	dashboardUsers++
	_, user, kubeconfig = namedUserClient(fmt.Sprintf("%s-%d", name, dashboardUsers), roles...)
	return user, kubeconfig
}

// chromiumPath is $CHROMIUM, else Debian's /usr/bin/chromium.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// dashboardRun is a running `kubectl advisor dashboard`.
type dashboardRun struct {
	url  string // the address it printed, with the one-time launch code
	base string // http://127.0.0.1:PORT
	port string
	code string
}

var dashboardURL = regexp.MustCompile(`http://(127\.0\.0\.1:(\d+))/\?code=([0-9a-f]{32})`)

// startDashboard runs _output/bin/kubectl-advisor dashboard with a user's
// kubeconfig until the spec ends.
func startDashboard(kubeconfig string) dashboardRun {
	GinkgoHelper()
	cmd := exec.Command(filepath.Join(testEnv.BinDir, "kubectl-advisor"), "--kubeconfig="+kubeconfig, "dashboard", "--refresh-interval=500ms")
	cmd.Dir = testEnv.RepoRoot
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Start()).To(Succeed())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	DeferCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		GinkgoWriter.Printf("kubectl advisor dashboard said:\n%s%s\n", stdout.String(), stderr.String())
	})
	var m []string
	Eventually(func() []string {
		m = dashboardURL.FindStringSubmatch(stdout.String())
		return m
	}).WithTimeout(20*time.Second).ShouldNot(BeNil(), func() string { return stdout.String() + stderr.String() })
	Expect(stdout.String()).To(ContainSubstring("Press Ctrl-C to stop."))
	return dashboardRun{url: m[0], base: "http://" + m[1], port: m[2], code: m[3]}
}

// browser is one headless Chromium for the container; each spec opens tabs
// in browser contexts of their own (no shared cookies).
var browser context.Context

func startBrowser() {
	GinkgoHelper()
	path := chromiumPath()
	if _, err := os.Stat(path); err != nil {
		Fail(fmt.Sprintf("no Chromium at %s: `make chromium` installs Debian's chromium package (as root), or set CHROMIUM to a Chromium binary", path))
	}
	profile, err := os.MkdirTemp("", "virt-advisor-chromium-")
	Expect(err).NotTo(HaveOccurred())
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root in CI
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// rebind.test is a name that resolves to 127.0.0.1, as in a DNS
		// rebinding attack.
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(suiteCtx, opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	Expect(chromedp.Do(ctx)).To(Succeed(), "starting %s", path)
	browser = ctx
	DeferCleanup(func() {
		cancel()
		cancelAlloc()
		_ = os.RemoveAll(profile)
	})
}

// newTab opens a tab in a fresh browser context: no cookies.
func newTab() context.Context {
	GinkgoHelper()
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	DeferCleanup(cancel)
	Expect(chromedp.Do(tab, chromedp.EmulateViewport(1280, 900))).To(Succeed())
	return tab
}

// within bounds one browser step.
func within(tab context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(tab, d)
	DeferCleanup(cancel)
	return ctx
}

func do(tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	Expect(chromedp.Do(within(tab, 30*time.Second), actions...)).To(Succeed())
}

// load runs actions that navigate and returns the new page's response.
func load(tab context.Context, actions ...chromedp.Action[chromedp.Void]) *network.Response {
	GinkgoHelper()
	resp, err := chromedp.RunResponse(within(tab, 30*time.Second), actions...)
	Expect(err).NotTo(HaveOccurred())
	return resp
}

// clickTo clicks an element with the mouse and returns the page it
// navigates to. A live region of the page may replace the element between
// finding it and clicking it: then either the node is gone ("Could not
// find node with given id") or the click lands on the detached node and
// nothing navigates (a slow browser widens that window; the configs
// table is replaced whenever an age in it changes). Nothing was clicked
// either way, so it finds the element again and clicks again, as a
// person would.
func clickTo(tab context.Context, css string) *network.Response {
	GinkgoHelper()
	before := locationOf(tab)
	for attempt := 1; ; attempt++ {
		resp, err := chromedp.RunResponse(within(tab, 20*time.Second), chromedp.Click(chromedp.CSS(css)))
		if err != nil && attempt < 5 && clickMissed(tab, err, before) {
			continue
		}
		Expect(err).NotTo(HaveOccurred(), "clicking "+css)
		return resp
	}
}

// clickMissed is true when a click failed without navigating away from
// before.
func clickMissed(tab context.Context, err error, before string) bool {
	if strings.Contains(err.Error(), "Could not find node with given id") {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) && locationOf(tab) == before
}

func locationOf(tab context.Context) string {
	href, _ := chromedp.Run(within(tab, 5*time.Second), chromedp.Evaluate[string](`location.href`))
	return href
}

// pageText is what the page shows, for failure messages.
func pageText(tab context.Context) func() string {
	return func() string {
		body, _ := chromedp.Run(within(tab, 5*time.Second), chromedp.Evaluate[string](`document.body.innerText`))
		return "the page shows:\n" + body
	}
}

func textOf(tab context.Context, css string) string {
	GinkgoHelper()
	s, err := chromedp.Run(within(tab, 20*time.Second), chromedp.Text(chromedp.CSS(css)))
	Expect(err).NotTo(HaveOccurred(), func() string { return "text of " + css + ": " + pageText(tab)() })
	return s
}

func eval[T any](tab context.Context, js string) T {
	GinkgoHelper()
	v, err := chromedp.Run(within(tab, 30*time.Second), chromedp.Evaluate[T](js))
	Expect(err).NotTo(HaveOccurred(), js)
	return v
}

// waitFor polls a JavaScript condition in the page.
func waitFor(tab context.Context, js string, timeout time.Duration) {
	GinkgoHelper()
	_, err := chromedp.Run(within(tab, timeout+5*time.Second), chromedp.Poll[bool](js, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		body, _ := chromedp.Run(within(tab, 5*time.Second), chromedp.Evaluate[string](`document.body.innerText`))
		Fail(fmt.Sprintf("waiting for %s: %v; the page shows:\n%s", js, err, body))
	}
}

// screenshot writes the page as _output/e2e-artifacts/dashboard-NAME.png
// (and into -dashboard-screenshots for the docs' ones).
func screenshot(tab context.Context, name string) {
	GinkgoHelper()
	png, err := chromedp.Run(within(tab, 30*time.Second), chromedp.FullScreenshot(100))
	Expect(err).NotTo(HaveOccurred())
	dirs := []string{filepath.Join(testEnv.RepoRoot, "_output", "e2e-artifacts")}
	if *screenshotsDir != "" && docScreenshots[name] {
		dirs = append(dirs, *screenshotsDir)
	}
	for _, dir := range dirs {
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		file := filepath.Join(dir, "dashboard-"+name+".png")
		Expect(os.WriteFile(file, png, 0o644)).To(Succeed())
		GinkgoWriter.Printf("screenshot %s\n", file)
	}
}

// submitForm posts a form from the page, as a user could forge one with
// the browser's developer tools.
func submitForm(tab context.Context, action string, fields map[string]string) *network.Response {
	GinkgoHelper()
	js := `(() => { const f = document.createElement('form'); f.method = 'post'; f.action = ` + jsString(action) + `;`
	for k, v := range fields {
		js += `{ const i = document.createElement('input'); i.type = 'hidden'; i.name = ` + jsString(k) + `; i.value = ` + jsString(v) + `; f.appendChild(i); }`
	}
	js += `document.body.appendChild(f); f.submit(); })()`
	return load(tab, chromedp.Evaluate[chromedp.Void](js))
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func csrfOf(tab context.Context) string {
	GinkgoHelper()
	return eval[string](tab, `document.querySelector('meta[name="csrf-token"]').content`)
}

var _ = Describe("kubectl advisor dashboard in a browser", Ordered, func() {
	BeforeAll(func() {
		startBrowser()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterReader}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "machineconfigs"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "events"}, Verbs: []string{"get", "list", "watch"}},
		}}
		_, err := kube.RbacV1().ClusterRoles().Create(suiteCtx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(suiteCtx, clusterReader, metav1.DeleteOptions{}) })
	})
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("lets an approver open a config in ReviewRequired, read the PSI MachineConfig's diff, approve, and follow the rollout to Completed without a reload", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		hash := planHashOf("load-aware-rebalancing")
		// Slow nodes, so that the page shows the rollout step by step (3 s
		// each: a page on a busy machine still sees one updating).
		patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"fake-mco.virt-advisor.io/step-time":"3s"}}}`)
		approver, kubeconfig := dashboardUser("alice", "virt-advisor-approver", clusterReader)
		d := startDashboard(kubeconfig)
		tab := newTab()

		By("the configs page")
		resp := load(tab, chromedp.Navigate(d.url))
		Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
		Expect(resp.URL).To(Equal(d.base+"/"), "the launch code leaves the address")
		row := `tr[data-config="load-aware-rebalancing"]`
		Expect(textOf(tab, row)).To(SatisfyAll(ContainSubstring("DryRun"), ContainSubstring("ReviewRequired"), ContainSubstring("High")))
		Expect(textOf(tab, "#whoami")).To(Equal(approver))
		screenshot(tab, "configs")

		By("the plan: the PSI MachineConfig's diff line by line, the settings the hash binds")
		clickTo(tab, row+` th a`)
		Expect(textOf(tab, "#plan-hash")).To(Equal(hash[:12]))
		added := eval[[]string](tab, `[...document.querySelectorAll('#item-enable-psi-metrics pre.diff .l.add')].map(e => e.textContent)`)
		Expect(added).To(ContainElements("+kind: MachineConfig", "+  kernelArguments:", "+  - psi=1"))
		Expect(textOf(tab, "#item-enable-psi-metrics pre.diff .l.file")).To(Equal("--- /dev/null"))
		Expect(textOf(tab, "#item-enable-psi-metrics")).To(ContainSubstring("pool worker, 3 nodes, once"))
		Expect(textOf(tab, ".bound")).To(SatisfyAll(ContainSubstring("spec.action"), ContainSubstring("DryRun"),
			ContainSubstring("spec.failurePolicy"), ContainSubstring("Abort"), ContainSubstring("spec.waitTimeout"), ContainSubstring("metadata.generation")))
		Expect(textOf(tab, "#approve")).To(Equal("Approve plan " + hash[:12]))
		screenshot(tab, "plan")

		By("approve, confirm with the keyboard")
		clickTo(tab, "#approve")
		Expect(textOf(tab, "#confirm")).To(Equal("Yes, approve plan " + hash[:12]))
		Expect(approvalOf("load-aware-rebalancing")).To(BeNil(), "nothing approved before the confirmation")
		screenshot(tab, "confirm")
		// With the keyboard, as anyone who does not use a mouse.
		resp = load(tab, chromedp.Focus(chromedp.CSS("#confirm")), chromedp.KeyEvent("\r"))
		Expect(resp.URL).To(Equal(d.base + "/configs/load-aware-rebalancing/rollout?approved=" + hash))
		a := approvalOf("load-aware-rebalancing")
		Expect(a).NotTo(BeNil())
		Expect(a.PlanHash).To(Equal(hash), "exactly the plan shown")
		Expect(a.ApprovedBy).To(Equal(approver))
		Expect(textOf(tab, "#flash")).To(ContainSubstring("Plan " + hash[:12] + " approved by " + approver))
		Expect(textOf(tab, "#approval")).To(ContainSubstring("plan " + hash[:12] + " by " + approver))

		By("the rollout, live: nodes updating one by one, then Completed, in the same document")
		do(tab, chromedp.Evaluate[chromedp.Void](`window.sameDocument = true;
			window.seen = new Set();
			new MutationObserver(() => document.querySelectorAll('[data-pool="worker"] .node').forEach(n => seen.add(n.className)))
				.observe(document.getElementById('main'), {subtree: true, childList: true});`))
		waitFor(tab, `document.querySelectorAll('[data-pool="worker"] .node.updated').length === 1 &&
			document.querySelector('[data-pool="worker"] .node.updating') !== null`, 60*time.Second)
		screenshot(tab, "rollout-progress")
		waitFor(tab, `document.getElementById('phase').textContent.includes('Completed') &&
			document.querySelectorAll('[data-pool="worker"] .node.updated').length === 3`, 90*time.Second)
		Expect(eval[bool](tab, `window.sameDocument === true`)).To(BeTrue(), "the page was not reloaded")
		Expect(eval[[]string](tab, `[...window.seen]`)).To(ContainElements("node updating", "node updated"))
		Expect(textOf(tab, `[data-pool="worker"] h3`)).To(ContainSubstring("Updated (3 of 3 nodes)"))
		// The items and the events are live regions of their own: each
		// shows the end on its own refresh.
		waitFor(tab, `document.getElementById('items').textContent.includes("MachineConfigPool 'worker' is ready (all 3 nodes updated)") &&
			document.getElementById('events').textContent.includes('Completed')`, 15*time.Second)
		Expect(textOf(tab, "#items")).To(ContainSubstring("MachineConfigPool 'worker' is ready (all 3 nodes updated)"))
		Expect(textOf(tab, "#events")).To(SatisfyAll(ContainSubstring("Approved"), ContainSubstring("Plan "+hash+" approved by "+approver), ContainSubstring("Completed")))
		// Nothing is left to abort: the live page drops the button.
		waitFor(tab, `document.getElementById('abort') === null && document.getElementById('abort-box') === null`, 10*time.Second)
		screenshot(tab, "rollout")
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})

	It("shows a halted rollout on its pool: the gate, the node, when, why, the step it halted and who ends it; the plan names the gates", func() {
		const name = "load-aware-rebalancing"
		// Cleanups run last first: the config is deleted before the halt
		// is lifted, so that nothing of it is written then.
		DeferCleanup(patchObject, mcpGVR, "", "worker", `{"metadata":{"annotations":{"advisor.kubevirt.io/halted":null,"advisor.kubevirt.io/step":null}}}`)
		configWith(name, `{"profile":"load-aware-rebalancing"}`)
		waitPhase(name, v1alpha1.PhaseReviewRequired, 15*time.Second)
		inForce := getPlan(name).Status.Settings.Gates
		Expect(inForce).NotTo(BeNil(), "a plan that rolls a pool has gates")

		By("the worker pool carries a halt of the rollout under the approval to come (sequence 1), and the step it halted")
		now := time.Now().UTC().Truncate(time.Second)
		halt := machineconfig.PoolHalt{Gate: gates.NodeBack, Node: "worker-1", At: now.Add(-2 * time.Minute), Approvals: map[string]int64{name: 1},
			Message:  "node 'worker-1' of MachineConfigPool 'worker' did not come back within 20m0s of its update (Ready false, MCO state Done)",
			Evidence: []string{"Ready=false", "machineconfiguration.openshift.io/state=Done"}}
		step := machineconfig.PoolStep{Nodes: []string{"worker-1"}, Desired: "rendered-worker-e2e", Started: now.Add(-22 * time.Minute)}
		records, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			machineconfig.HaltAnnotation: halt.Encode(), machineconfig.StepAnnotation: step.Encode()}}})
		Expect(err).NotTo(HaveOccurred())
		patchObject(mcpGVR, "", "worker", string(records))

		By("approved, the PSI MachineConfig is not written: the controller holds it for the halt")
		approvePlan(name)
		Eventually(func() string { return itemMessage(name, "enable-psi-metrics") }).WithTimeout(30 * time.Second).
			Should(ContainSubstring("the rollout on MachineConfigPool 'worker' is halted (gate nodeBack"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing written to a halted pool")

		By("kubectl advisor status says the halt and the step")
		r := plugin("", "status", name)
		Expect(r.code).To(Equal(0))
		Expect(r.stdout).To(SatisfyAll(
			ContainSubstring("Halted:    pool worker: gate nodeBack tripped on node worker-1 at "+halt.At.Format(time.RFC3339)+"\n"),
			ContainSubstring("           evidence: Ready=false; machineconfiguration.openshift.io/state=Done\n"),
			ContainSubstring("an approver approves the plan again to resume (kubectl advisor approve "+name+"), or aborts or reverts it"),
			ContainSubstring("Step:      pool worker: node(s) worker-1 in the step since "+step.Started.Format(time.RFC3339)+"\n")))

		_, kubeconfig := dashboardUser("hal", "virt-advisor-approver", clusterReader)
		d := startDashboard(kubeconfig)
		tab := newTab()
		load(tab, chromedp.Navigate(d.url))

		By("the plan page names the gates in force")
		load(tab, chromedp.Navigate(d.base+"/configs/"+name))
		Expect(textOf(tab, "#gates")).To(HavePrefix(fmt.Sprintf("Gates between node reboots: node back within %s, %d failed migration",
			inForce.NodeReadyTimeout, inForce.MaxFailedMigrations)))
		Expect(textOf(tab, "#gates")).To(ContainSubstring("soak " + inForce.Soak + ", "))

		By("the rollout page: the pool reads Halted, the halt stands out with who ends it, the step it halted is named")
		load(tab, chromedp.Navigate(d.base+"/configs/"+name+"/rollout"))
		Expect(textOf(tab, `[data-pool="worker"] h3`)).To(ContainSubstring("Halted: gate nodeBack"))
		Expect(eval[string](tab, `getComputedStyle(document.getElementById('halt-worker')).borderLeftColor`)).To(Equal("rgb(194, 28, 44)"), "the halt is drawn in the bad tone")
		Expect(eval[string](tab, `document.querySelector('#halt-worker strong').textContent`)).To(Equal("Rollout halted"))
		Expect(textOf(tab, "#halt-worker")).To(SatisfyAll(
			ContainSubstring(": gate nodeBack tripped on node worker-1 at "),
			MatchRegexp(`UTC \(2m\d*s? ago\)\.`),
			ContainSubstring(halt.Message),
			ContainSubstring("machineconfiguration.openshift.io/state=Done"),
			ContainSubstring("an approver approves the plan again to resume (kubectl advisor approve "+name+"), or aborts or reverts it"),
			ContainSubstring("Review the plan")))
		Expect(textOf(tab, `[data-step="worker"]`)).To(ContainSubstring("The step it halted: node worker-1, in the step since"))
		Expect(textOf(tab, "#items")).To(ContainSubstring("the rollout on MachineConfigPool 'worker' is halted (gate nodeBack"))
		screenshot(tab, "halted")
	})

	It("shows the approval policies, and a config approved by a policy as such", func() {
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-dashboard-quiet", []string{"load-aware-rebalancing"}, nil))
		configWith("load-aware-rebalancing", loadAwareSpec(false, 1200))
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		_, kubeconfig := dashboardUser("erin", "virt-advisor-viewer", clusterReader)
		d := startDashboard(kubeconfig)
		tab := newTab()
		load(tab, chromedp.Navigate(d.url))
		Expect(textOf(tab, `tr[data-config="load-aware-rebalancing"]`)).To(SatisfyAll(
			ContainSubstring("approved by policy e2e-dashboard-quiet"), ContainSubstring("policy/e2e-dashboard-quiet (set by "+setterName+")")))
		Expect(textOf(tab, `tr[data-policy="e2e-dashboard-quiet"]`)).To(SatisfyAll(ContainSubstring("load-aware-rebalancing"),
			ContainSubstring("impact<=Low reboots=None vms=LiveMigrate"), ContainSubstring("any time"), ContainSubstring(setterName)))
		screenshot(tab, "policies")
	})

	It("shows an editor no approve button, and the server's 403 when the editor forces a POST; nothing is approved", func() {
		hash := exampleConfigReady()
		editor, kubeconfig := dashboardUser("bob", "virt-advisor-editor")
		d := startDashboard(kubeconfig)
		tab := newTab()
		load(tab, chromedp.Navigate(d.url))
		load(tab, chromedp.Navigate(d.base+"/configs/example-profile"))
		Expect(textOf(tab, "#plan-hash")).To(Equal(hash[:12]), "an editor may read the plan")
		Expect(eval[bool](tab, `document.getElementById('approve') === null`)).To(BeTrue(), "no approve button")
		Expect(textOf(tab, "#cannot-approve")).To(SatisfyAll(ContainSubstring("You ("+editor+") may not approve plans"), ContainSubstring("virt-advisor-approver")))

		resp := submitForm(tab, "/configs/example-profile/approve", map[string]string{"csrf": csrfOf(tab), "planHash": hash, "confirm": "yes"})
		Expect(resp.Status).To(BeEquivalentTo(403))
		Expect(textOf(tab, "#banner")).To(SatisfyAll(
			ContainSubstring("The server refused your approval (403 Forbidden): nothing was approved."),
			ContainSubstring(`user "`+editor+`" may not create virtplatformconfigs/approve: ask for the virt-advisor-approver role`)))
		screenshot(tab, "forbidden")
		Consistently(func() *v1alpha1.ApprovalRecord { return approvalOf("example-profile") }).WithTimeout(2 * time.Second).Should(BeNil())
		Expect(exampleConfigMap()).To(BeNil(), "nothing written")
	})

	It("says the plan changed since it was loaded (409) and shows the new diff; nothing is approved", func() {
		hash := exampleConfigReady()
		_, kubeconfig := dashboardUser("carol", "virt-advisor-approver")
		d := startDashboard(kubeconfig)
		tab := newTab()
		load(tab, chromedp.Navigate(d.url))
		load(tab, chromedp.Navigate(d.base+"/configs/example-profile"))
		Expect(textOf(tab, "#approve")).To(Equal("Approve plan " + hash[:12]))

		// Someone writes the target between the load and the click.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "example-config", Namespace: hcoNS}, Data: map[string]string{"example-key": "edited-by-hand"}}
		_, err := kube.CoreV1().ConfigMaps(hcoNS).Create(suiteCtx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		var live string
		Eventually(func() string { live = planHashOf("example-profile"); return live }).WithTimeout(10 * time.Second).ShouldNot(Equal(hash))

		clickTo(tab, "#approve")
		resp := clickTo(tab, "#confirm")
		Expect(resp.Status).To(BeEquivalentTo(409))
		Expect(textOf(tab, "#banner")).To(SatisfyAll(
			ContainSubstring("The plan changed since you loaded it: nothing was approved."),
			ContainSubstring("you approved plan "+hash+" but the live plan is now "+live)))
		Expect(textOf(tab, "#plan-hash")).To(Equal(live[:12]), "the new plan")
		Expect(eval[[]string](tab, `[...document.querySelectorAll('pre.diff .l.del')].map(e => e.textContent)`)).To(ContainElement("-  example-key: edited-by-hand"))
		Expect(eval[[]string](tab, `[...document.querySelectorAll('pre.diff .l.add')].map(e => e.textContent)`)).To(ContainElement("+  example-key: example-value"))
		Expect(textOf(tab, "#approve")).To(Equal("Approve plan " + live[:12]))
		screenshot(tab, "conflict")
		Expect(approvalOf("example-profile")).To(BeNil(), "nothing approved")
		Expect(getConfig("example-profile").Status.Phase).To(Equal(v1alpha1.PhaseReviewRequired))
	})

	It("opens with its launch code once; refuses a request without the session cookie, with a foreign Host, or a POST without the CSRF token; nothing is approved", func() {
		hash := exampleConfigReady()
		_, kubeconfig := dashboardUser("dave", "virt-advisor-approver")
		d := startDashboard(kubeconfig)

		By("without the session cookie")
		tab := newTab()
		resp := load(tab, chromedp.Navigate(d.base+"/configs/example-profile"))
		Expect(resp.Status).To(BeEquivalentTo(401))
		Expect(textOf(tab, "main")).To(ContainSubstring("this page needs the session of this run"))
		Expect(eval[bool](tab, `document.querySelector('meta[name="csrf-token"]') === null`)).To(BeTrue(), "a refused page carries no CSRF token")
		screenshot(tab, "refused")
		resp = load(tab, chromedp.Navigate(d.base+"/?code="+strings.Repeat("0", 32)))
		Expect(resp.Status).To(BeEquivalentTo(403))
		Expect(textOf(tab, "main")).To(ContainSubstring("not the launch code of this run"))

		By("with a foreign Host: a name that resolves to 127.0.0.1 (DNS rebinding), even with the launch code")
		rebound := newTab()
		resp = load(rebound, chromedp.Navigate("http://rebind.test:"+d.port+"/?code="+d.code))
		Expect(resp.Status).To(BeEquivalentTo(403))
		Expect(textOf(rebound, "main")).To(ContainSubstring("not a loopback host name"))

		By("the launch code opens the dashboard in one browser; the session's secret is in no address")
		resp = load(tab, chromedp.Navigate(d.url))
		Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
		Expect(resp.URL).To(Equal(d.base + "/"))
		cookies, err := chromedp.Call(within(tab, 10*time.Second), network.GetCookies, network.GetCookiesParams{URLs: []string{d.base + "/"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(cookies.Cookies).To(HaveLen(1))
		session := cookies.Cookies[0]
		Expect(session.Name).To(Equal("advisor-dashboard-" + d.port))
		Expect(session.HTTPOnly).To(BeTrue())
		Expect(session.SameSite).To(Equal(network.CookieSameSiteStrict))
		Expect(session.Value).NotTo(ContainSubstring(d.code))
		Expect(d.url).NotTo(ContainSubstring(session.Value))
		Expect(eval[string](tab, `document.cookie`)).To(BeEmpty(), "no script reads the session cookie")

		By("the launch code a second time, in another browser: refused")
		other := newTab()
		resp = load(other, chromedp.Navigate(d.url))
		Expect(resp.Status).To(BeEquivalentTo(403))
		Expect(textOf(other, "main")).To(SatisfyAll(ContainSubstring("this launch code was already used"), ContainSubstring("Run kubectl advisor dashboard again")))
		screenshot(other, "launch-code-used")

		By("a POST without the CSRF token, from a page that has the session")
		load(tab, chromedp.Navigate(d.base+"/configs/example-profile"))
		csrf := csrfOf(tab)
		resp = submitForm(tab, "/configs/example-profile/approve", map[string]string{"planHash": hash, "confirm": "yes"})
		Expect(resp.Status).To(BeEquivalentTo(403))
		Expect(textOf(tab, "main")).To(ContainSubstring("the form did not come from this dashboard"))

		By("a POST with the session cookie and the CSRF token but a foreign Host")
		form := url.Values{"csrf": {csrf}, "planHash": {hash}, "confirm": {"yes"}}
		req, err := http.NewRequest(http.MethodPost, d.base+"/configs/example-profile/approve", strings.NewReader(form.Encode()))
		Expect(err).NotTo(HaveOccurred())
		req.Host = "rebind.test:" + d.port
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		res, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		res.Body.Close()
		Expect(res.StatusCode).To(Equal(403))

		Consistently(func() *v1alpha1.ApprovalRecord { return approvalOf("example-profile") }).WithTimeout(2 * time.Second).Should(BeNil())
		Expect(exampleConfigMap()).To(BeNil(), "nothing written")
	})
})
