// Package e2e tests virt-advisor through the aggregation layer of a real
// kube-apiserver and etcd, with real RBAC and the test CRDs.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

var keepDir = flag.Bool("keep-dir", false, "keep the environment's directory (logs, data) after the suite")

var (
	testEnv    *env.Env
	kube       kubernetes.Interface
	advisor    versioned.Interface
	adminRaw   rest.Interface
	suiteCtx   context.Context
	suiteClose context.CancelFunc
	// initialListing is `kubectl get virtplatformconfigs` right after start.
	initialListing string
	// firstApply is what `kubectl apply -f artifacts/samples/…` of each
	// advertised profile prints right after start (a server dry run).
	firstApply string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "virt-advisor e2e")
}

var _ = BeforeSuite(func() {
	suiteCtx, suiteClose = context.WithCancel(context.Background())
	dir, err := os.MkdirTemp("", "virt-advisor-e2e-")
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(suiteCtx, 3*time.Minute)
	defer cancel()
	testEnv, err = env.Start(ctx, env.Options{
		Dir: dir, Log: GinkgoWriter,
		// Fast rollouts and a short Lease keep the suite quick.
		FakeMCO: fakemco.Options{RenderDelay: 200 * time.Millisecond, StepTime: 300 * time.Millisecond},
		// A short coalescing window keeps every MachineConfig spec quick;
		// rollouts_test.go starts advisors with other windows.
		AdvisorArgs: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			"--rollout-coalesce-window=3s"},
	})
	Expect(err).NotTo(HaveOccurred())
	kube = kubernetes.NewForConfigOrDie(testEnv.AdminConfig)
	advisor = versioned.NewForConfigOrDie(testEnv.AdminConfig)
	adminRaw = advisor.AdvisorV1alpha1().RESTClient()
	// What a user sees right after start, checked by a spec.
	Eventually(func() (string, error) {
		var err error
		initialListing, err = kubectl("get", "virtplatformconfigs")
		return initialListing, err
	}).WithTimeout(30 * time.Second).Should(And(ContainSubstring("virt-higher-density"), ContainSubstring("live-migration-limits")))
	for _, sample := range []string{"load-aware-rebalancing", "virt-higher-density"} {
		out, stderr, err := testEnv.Kubectl(suiteCtx, "", "apply", "--dry-run=server", "-f", filepath.Join("artifacts", "samples", sample+".yaml"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		firstApply += out + stderr
	}
	DeferCleanup(func() {
		testEnv.Stop()
		if !*keepDir && !anyFailed {
			_ = os.RemoveAll(dir)
		} else {
			GinkgoWriter.Printf("environment kept in %s (logs in %s)\n", dir, filepath.Join(dir, "logs"))
		}
		suiteClose()
	})
})

// startFirst marks a container whose specs wait a minute or more (for
// maintenance windows, outages, rollouts of slow nodes, make run): the
// processes take them before the short ones, so that none is left to run
// alone at the end of the suite (longest first).
var startFirst = SpecPriority(1)

// anyFailed keeps the environment's directory for a post-mortem.
var anyFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
	}
	if r.Failed() && testEnv != nil && testEnv.Advisor() != nil {
		GinkgoWriter.Printf("virt-advisor-apiserver log tail:\n%s\n", testEnv.Advisor().LogTail(40))
	}
})

// Where the suite's time goes: the slowest specs and the time of each file,
// written at the end of every run to $E2E_TIMES (make e2e prints it; go
// test shows a passing package's output only with -v), else stdout.
var _ = ReportAfterSuite("where the time went", func(r Report) {
	out := os.Stdout
	if path := os.Getenv("E2E_TIMES"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "E2E_TIMES: %v\n", err)
			return
		}
		defer f.Close()
		out = f
	}
	var specs []SpecReport
	files := map[string]time.Duration{}
	procs := map[int]*procTime{}
	proc := func(n int) *procTime {
		if procs[n] == nil {
			procs[n] = &procTime{}
		}
		return procs[n]
	}
	for _, s := range r.SpecReports {
		if s.LeafNodeType == types.NodeTypeBeforeSuite {
			proc(s.ParallelProcess).setup += s.RunTime
		}
		if s.LeafNodeType != types.NodeTypeIt || s.State == types.SpecStateSkipped {
			continue
		}
		specs = append(specs, s)
		files[filepath.Base(s.LeafNodeLocation.FileName)] += s.RunTime
		p := proc(s.ParallelProcess)
		p.specs++
		p.busy += s.RunTime
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].RunTime > specs[j].RunTime })
	var sum time.Duration
	for _, s := range specs {
		sum += s.RunTime
	}
	fmt.Fprintf(out, "e2e: %d specs ran in %v (suite %v on %d processes, setup and teardown included)\n",
		len(specs), sum.Round(time.Second), r.RunTime.Round(time.Second), r.SuiteConfig.ParallelTotal)
	fmt.Fprintln(out, "slowest specs:")
	for _, s := range specs[:min(15, len(specs))] {
		fmt.Fprintf(out, "  %6.1fs  %s:%d  %s\n", s.RunTime.Seconds(), filepath.Base(s.LeafNodeLocation.FileName), s.LeafNodeLocation.LineNumber, s.FullText())
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Slice(names, func(i, j int) bool { return files[names[i]] > files[names[j]] })
	fmt.Fprintln(out, "by file:")
	for _, f := range names {
		fmt.Fprintf(out, "  %6.1fs  %s\n", files[f].Seconds(), f)
	}
	// Each process has a control plane of its own (BeforeSuite); a process
	// busy much longer than the others is the suite's tail.
	fmt.Fprintf(out, "by process (%d):\n", r.SuiteConfig.ParallelTotal)
	for n := 1; n <= r.SuiteConfig.ParallelTotal; n++ {
		if p := procs[n]; p != nil {
			fmt.Fprintf(out, "  %d: setup %5.1fs, %3d specs in %6.1fs\n", n, p.setup.Seconds(), p.specs, p.busy.Seconds())
		}
	}
})

// What failed, a few lines per spec, written to $E2E_FAILURES at the end
// of a run (CI prints it last, where a truncated log still shows it).
var _ = ReportAfterSuite("what failed", func(r Report) {
	path := os.Getenv("E2E_FAILURES")
	if path == "" {
		return
	}
	var b strings.Builder
	for _, s := range r.SpecReports {
		if !s.Failed() {
			continue
		}
		loc := s.Failure.Location
		fmt.Fprintf(&b, "- [%s] %s\n  at %s:%d (process %d)\n  %s\n", s.State, s.FullText(),
			filepath.Base(loc.FileName), loc.LineNumber, s.ParallelProcess, firstLines(s.Failure.Message, 3, 300))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "E2E_FAILURES: %v\n", err)
	}
})

// firstLines returns at most n lines of s, at most max bytes, indented to
// follow a list item.
func firstLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	out := strings.Join(lines, "\n  ")
	if len(out) > max {
		out = out[:max] + "…"
	}
	return out
}

// procTime is what one parallel process spent: starting its environment
// and running its specs.
type procTime struct {
	setup, busy time.Duration
	specs       int
}

// kubectl runs kubectl as the cluster admin.
func kubectl(args ...string) (string, error) {
	out, stderr, err := testEnv.Kubectl(suiteCtx, testEnv.Kubeconfig, args...)
	if err != nil {
		return out + stderr, err
	}
	return out, nil
}

// explain is kubectl explain of path. The aggregator publishes a group's
// OpenAPI v3 shortly after its APIService turns Available, and looks at an
// aggregated server's again once a minute: until then it may still hold the
// one of a server another spec ran (another version; the server then
// redirects to its own hash, which the aggregator refuses).
func explain(path string) string {
	GinkgoHelper()
	var out string
	Eventually(func() error {
		var err error
		out, err = kubectl("explain", path)
		return err
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	return out
}

// newConfig returns a VirtPlatformConfig named after its profile.
func newConfig(profile string) *v1alpha1.VirtPlatformConfig {
	return &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: profile},
	}
}

// deleteConfig removes a config and waits until it is gone, so the next
// spec can reuse the singleton name.
func deleteConfig(name string) {
	err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Delete(suiteCtx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() bool {
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(BeTrue())
}

// createConfig creates a config and deletes it when the spec ends.
func createConfig(c *v1alpha1.VirtPlatformConfig) *v1alpha1.VirtPlatformConfig {
	deleteConfig(c.Name)
	created, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, c, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(deleteConfig, c.Name)
	return created
}

// statusCode returns the HTTP status of an API error, 0 for success.
func statusCode(err error) int32 {
	if err == nil {
		return 0
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return -1
}

// serveThrough starts another instance of the server (binary in BinDir)
// with its own storage prefix and Lease on the shared etcd, puts it behind
// the APIService for the rest of the container, and puts the main
// instance back (and the cluster's targets) when the container ends.
func serveThrough(name, binary string, args ...string) *env.Advisor {
	GinkgoHelper()
	resetCluster()
	args = append([]string{"--etcd-servers=" + testEnv.EtcdURL, "--etcd-prefix=/" + name + "-" + strings.ToLower(randomSuffix()),
		"--leader-elect-resource-name=virt-advisor-" + name}, args...)
	adv, err := testEnv.StartAdvisorBinary(suiteCtx, name, binary, args...)
	Expect(err).NotTo(HaveOccurred())
	main := testEnv.Advisor()
	Expect(testEnv.RegisterAdvisor(suiteCtx, adv)).To(Succeed())
	DeferCleanup(func() {
		Expect(testEnv.RegisterAdvisor(suiteCtx, main)).To(Succeed())
		_ = adv.Stop(syscall.SIGTERM)
		resetCluster()
	})
	return adv
}
