package e2e

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// pluginResult is one run of kubectl-advisor.
type pluginResult struct {
	stdout, stderr string
	code           int
}

// pluginCmd prepares _output/bin/kubectl-advisor as the admin; args may
// add --as or another --kubeconfig.
func pluginCmd(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(suiteCtx, filepath.Join(testEnv.BinDir, "kubectl-advisor"),
		append([]string{"--kubeconfig=" + testEnv.Kubeconfig}, args...)...)
	cmd.Dir = testEnv.RepoRoot
	return cmd
}

// plugin runs kubectl-advisor with stdin and logs what it printed.
func plugin(stdin string, args ...string) pluginResult {
	GinkgoHelper()
	cmd := pluginCmd(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	return pluginWait(cmd, cmd.Run(), &stdout, &stderr)
}

func pluginWait(cmd *exec.Cmd, err error, stdout, stderr interface{ String() string }) pluginResult {
	GinkgoHelper()
	r := pluginResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("$ kubectl advisor %s   # exit %d\n%s%s\n", strings.Join(cmd.Args[2:], " "), r.code, r.stdout, r.stderr)
	return r
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exampleConfigReady creates example-profile in DryRun, waits for its plan
// and returns its hash.
func exampleConfigReady() string {
	GinkgoHelper()
	configWith("example-profile", `{"profile":"example-profile"}`)
	waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
	return planHashOf("example-profile")
}

func approvalOf(name string) *v1alpha1.ApprovalRecord {
	return getConfig(name).Status.Approval
}

var _ = Describe("kubectl advisor", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("plan exits 0 without changes, 1 with changes, 2 for an unknown name", func() {
		hash := exampleConfigReady()

		r := plugin("", "plan", "example-profile")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stderr).To(BeEmpty())
		Expect(r.stdout).To(HavePrefix("Plan " + hash[:12] + " for example-profile (generation 1), impact Low\n"))
		Expect(r.stdout).To(ContainSubstring("[1/1] configure-example-component: Create ConfigMap openshift-cnv/example-config, impact Low\n"))
		Expect(r.stdout).To(ContainSubstring("--- /dev/null\n+++ example-config (ConfigMap)\n"))
		Expect(r.stdout).To(ContainSubstring("+  example-key: example-value\n"))
		Expect(r.stdout).To(HaveSuffix("\nreboots: none\n1 of 1 items change something.\napproval policies: none covers example-profile; a person approves this plan\n"))
		Expect(r.stdout).NotTo(ContainSubstring("\x1b["), "no colour when stdout is not a terminal")

		r = plugin("", "plan", "example-profile", "-o", "json")
		Expect(r.code).To(Equal(1))
		Expect(r.stdout).To(ContainSubstring(`"kind": "Plan"`))
		Expect(r.stdout).To(ContainSubstring(`"planHash": "` + hash + `"`))

		r = plugin("", "approve", "example-profile", "--yes")
		Expect(r.code).To(Equal(0), r.stderr)
		waitPhase("example-profile", v1alpha1.PhaseCompleted, 15*time.Second)

		r = plugin("", "plan", "example-profile")
		Expect(r.code).To(Equal(0), r.stdout+r.stderr)
		// Nothing to write: impact None, and it does not say it "will be configured".
		Expect(r.stdout).To(ContainSubstring("[1/1] configure-example-component: None ConfigMap openshift-cnv/example-config, impact None\n"))
		Expect(r.stdout).To(ContainSubstring("ConfigMap 'example-config' is already configured; nothing to change\n"))
		Expect(r.stdout).To(HaveSuffix("\nreboots: none\n0 of 1 items change something.\n"))

		r = plugin("", "plan", "no-such-config")
		Expect(r.code).To(Equal(2))
		Expect(r.stdout).To(BeEmpty())
		Expect(r.stderr).To(Equal("Error: virtplatformconfigs.advisor.kubevirt.io \"no-such-config\" not found (kubectl advisor status lists the configs)\n"))

		r = plugin("", "status")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(HavePrefix("NAME "))
		Expect(r.stdout).To(MatchRegexp(`(?m)^example-profile\s+DryRun\s+Completed\s+Low\s+[0-9a-f]{12} by admin\s+\d+s$`))
	})

	It("approve with n approves nothing; with y it approves exactly the plan it showed", func() {
		hash := exampleConfigReady()

		r := plugin("n\n", "approve", "example-profile")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stdout).To(HavePrefix("Plan " + hash[:12] + " for example-profile"))
		Expect(r.stdout).To(HaveSuffix("\nApprove plan " + hash[:12] + "? [y/N] Nothing approved.\n"))
		Consistently(func() *v1alpha1.ApprovalRecord { return approvalOf("example-profile") }).
			WithTimeout(time.Second).Should(BeNil())
		Expect(getObject(configMapGVR, hcoNS, "example-config")).To(BeNil(), "nothing applied")

		r = plugin("y\n", "approve", "example-profile", "--dry-run")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(HaveSuffix("[y/N] Plan " + hash[:12] + " can be approved (dry run: nothing recorded).\n"))
		Expect(approvalOf("example-profile")).To(BeNil(), "a dry run records nothing")

		r = plugin("y\n", "approve", "example-profile")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`\[y/N\] Plan ` + hash[:12] + ` approved by admin at \S+Z\. Follow it with: kubectl advisor status -w example-profile\n$`))
		a := approvalOf("example-profile")
		Expect(a).NotTo(BeNil())
		Expect(a.PlanHash).To(Equal(hash), "exactly the plan shown")
		Expect(a.ApprovedBy).To(Equal("admin"))

		r = plugin("", "status", "example-profile", "-w", "--timeout=1m")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(HaveSuffix("Phase:     Completed: Configuration successfully applied and in sync\n" +
			"Approval:  plan " + hash[:12] + " by admin at " + a.ApprovedAt.UTC().Format(time.RFC3339) + " (generation 1)\n" +
			"Items:\n" +
			"  ITEM                          TARGET                                   OPERATION   STATE       MESSAGE\n" +
			"  configure-example-component   ConfigMap openshift-cnv/example-config   Create      Completed   Applied successfully\n"))
	})

	It("approve reports the 409 and approves nothing when the plan changed before the answer", func() {
		hash := exampleConfigReady()

		cmd := pluginCmd("approve", "example-profile")
		stdin, err := cmd.StdinPipe()
		Expect(err).NotTo(HaveOccurred())
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		Expect(cmd.Start()).To(Succeed())
		Eventually(stdout.String).WithTimeout(20 * time.Second).Should(HaveSuffix("Approve plan " + hash[:12] + "? [y/N] "))

		// Someone else writes the target while the question is open.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "example-config", Namespace: hcoNS}, Data: map[string]string{"example-key": "changed"}}
		_, err = kube.CoreV1().ConfigMaps(hcoNS).Create(suiteCtx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return planHashOf("example-profile") }).WithTimeout(10 * time.Second).ShouldNot(Equal(hash))

		_, err = io.WriteString(stdin, "y\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(stdin.Close()).To(Succeed())
		r := pluginWait(cmd, cmd.Wait(), &stdout, &stderr)
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(HavePrefix(`Error: Operation cannot be fulfilled on virtplatformconfigs.advisor.kubevirt.io "example-profile": `))
		Expect(r.stderr).To(ContainSubstring("you approved plan " + hash))
		Expect(r.stderr).To(ContainSubstring("GET the plan again"))
		Expect(strings.Count(r.stderr, "\n")).To(Equal(1), "one line")
		Expect(approvalOf("example-profile")).To(BeNil(), "nothing approved")
		Expect(getConfig("example-profile").Status.Phase).To(Equal(v1alpha1.PhaseReviewRequired))
	})

	It("says which permission is missing: --as an editor cannot approve, a viewer cannot read the plan", func() {
		exampleConfigReady()
		_, editor, _ := userClient("virt-advisor-editor")
		r := plugin("", "--as="+editor, "approve", "example-profile", "--yes")
		Expect(r.code).To(Equal(2))
		Expect(r.stdout).To(HavePrefix("Plan "), "an editor may read the plan")
		Expect(r.stderr).To(Equal(`Error: user "` + editor + `" may not create virtplatformconfigs/approve: ask for the virt-advisor-approver role` + "\n"))
		Expect(approvalOf("example-profile")).To(BeNil())

		_, viewer, kubeconfig := userClient("virt-advisor-viewer")
		r = plugin("", "--kubeconfig="+kubeconfig, "plan", "example-profile")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(Equal(`Error: user "` + viewer + `" may not get virtplatformconfigs/plan: ask for the virt-advisor-approver (or virt-advisor-editor) role` + "\n"))
	})

	It("shows the reboots of a MachineConfig and follows the rollout with status -w until Completed", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		hash := planHashOf("load-aware-rebalancing")

		r := plugin("", "plan", "load-aware-rebalancing")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stdout).To(ContainSubstring("[1/2] enable-psi-metrics: Create MachineConfig 99-worker-psi-karg, impact High\n"))
		Expect(r.stdout).To(ContainSubstring("+  - psi=1\n"))
		Expect(r.stdout).To(HaveSuffix("\nreboots: pool worker, 3 nodes, once\n2 of 2 items change something.\napproval policies: none covers load-aware-rebalancing; a person approves this plan\n"))

		// Who may approve but not read pools still gets the plan, and the reason.
		_, approver, _ := userClient("virt-advisor-approver")
		r = plugin("", "--as="+approver, "plan", "load-aware-rebalancing")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stdout).To(ContainSubstring(`reboots: unknown (cannot read MachineConfigPools: user "` + approver + `" may not list machineconfigpools)` + "\n"))

		r = plugin("", "approve", "load-aware-rebalancing", "--yes")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(approvalOf("load-aware-rebalancing").PlanHash).To(Equal(hash))

		r = plugin("", "status", "load-aware-rebalancing", "--watch", "--timeout=2m")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(ContainSubstring("Phase:     InProgress"))
		Expect(r.stdout).To(ContainSubstring("Pools:\n  POOL     UPDATED   READY   MACHINES   DEGRADED   PAUSED\n"))
		blocks := strings.Split(r.stdout, "\n\n")
		last := blocks[len(blocks)-1]
		Expect(last).To(ContainSubstring("Phase:     Completed: Configuration successfully applied and in sync\n"))
		Expect(last).To(ContainSubstring("enable-psi-metrics               MachineConfig 99-worker-psi-karg"))
		Expect(last).To(ContainSubstring("Completed   MachineConfigPool 'worker' is ready (all 3 nodes updated)\n"))
		Expect(last).To(HaveSuffix("  worker   3         3       3          0          false\n"))
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})
})
