package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/test/env"
)

// The soak (make soak; not part of make e2e): for SOAK_DURATION (default
// 20m) it cycles review → approve → rollout → drift → revert across both
// MachineConfig profiles, each approval under a random fault of the
// harness, from a seeded RNG (SOAK_SEED replays a run). At the end: every
// approved plan ended Completed; the server wrote each approved item
// exactly once and nothing else (kube-apiserver's audit log), the targets'
// resourceVersions moved only with those writes and the soak's own
// edits, and our field manager holds the managed fields; every node was
// updated once per rollout and there was one rollout per approved
// MachineConfig change; the server's RSS and goroutines stayed flat.

const (
	soakDriftManager = "soak-drift"
	// soakRSSGrowth bounds the server's RSS growth between the warm-up
	// and the end.
	soakRSSGrowth = 20 << 20
	// soakGoroutineTolerance is the goroutine count's allowed growth: the
	// aggregator's and the probes' HTTP/2 connections to the server come
	// and go (a few goroutines each); everything else is fixed workers.
	soakGoroutineTolerance = 10
	// soakSettle is how long the server is left alone before it is
	// measured: longer than client-go's longest watch backoff (30 s).
	soakSettle = 40 * time.Second
)

// soakProfile is how the soak turns a profile on, drifts it and reverts it.
type soakProfile struct {
	name    string
	on, off string // spec JSON: the profile with its MachineConfig, and without
	mc      string // the MachineConfig it writes when on
	// driftItem is the item whose managed field the soak edits by hand.
	driftItem  string
	driftPatch func(value int) (target soakTarget, patch string)
}

var soakProfiles = []soakProfile{
	{
		name: "virt-higher-density",
		on:   `{"profile":"virt-higher-density"}`,
		off:  `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false}}}`,
		mc:   "90-worker-kubelet-swap", driftItem: "configure-higher-density",
		driftPatch: func(v int) (soakTarget, string) {
			return soakTargets[2], fmt.Sprintf(`{"spec":{"higherWorkloadDensity":{"memoryOvercommitPercentage":%d}}}`, 101+v%49)
		},
	},
	{
		name: "load-aware-rebalancing",
		on:   `{"profile":"load-aware-rebalancing"}`,
		off:  `{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":false}}}`,
		mc:   "99-worker-psi-karg", driftItem: "enable-load-aware-descheduling",
		driftPatch: func(int) (soakTarget, string) {
			return soakTargets[3], `{"spec":{"mode":"Predictive"}}`
		},
	},
}

// soakTarget is an object the profiles write, as audit events name it.
type soakTarget struct{ group, resource, namespace, name string }

func (t soakTarget) String() string {
	return fmt.Sprintf("%s/%s %s", t.resource, t.name, t.namespace)
}

func (t soakTarget) gvr() schema.GroupVersionResource {
	for _, gvr := range []schema.GroupVersionResource{mcGVR, hcoGVR, kdGVR} {
		if gvr.Group == t.group && gvr.Resource == t.resource {
			return gvr
		}
	}
	Fail("the soak knows no version of " + t.resource)
	return schema.GroupVersionResource{}
}

// targetOf is the audit name of a plan item's target.
func targetOf(ref v1alpha1.ObjectReference) soakTarget {
	resources := map[string]string{"MachineConfig": "machineconfigs", "HyperConverged": "hyperconvergeds", "KubeDescheduler": "kubedeschedulers"}
	r, ok := resources[ref.Kind]
	Expect(ok).To(BeTrue(), "the soak knows no resource of kind %s", ref.Kind)
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return soakTarget{group: group, resource: r, namespace: ref.Namespace, name: ref.Name}
}

var soakTargets = []soakTarget{
	{"machineconfiguration.openshift.io", "machineconfigs", "", "90-worker-kubelet-swap"},
	{"machineconfiguration.openshift.io", "machineconfigs", "", "99-worker-psi-karg"},
	{"hco.kubevirt.io", "hyperconvergeds", hcoNS, hcoName},
	{"operator.openshift.io", "kubedeschedulers", kdNS, "cluster"},
}

func auditTarget(ev auditv1.Event) (soakTarget, bool) {
	if ev.ObjectRef == nil {
		return soakTarget{}, false
	}
	t := soakTarget{ev.ObjectRef.APIGroup, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}
	return t, slices.Contains(soakTargets, t) && ev.ObjectRef.Subresource == ""
}

// succeeded: a write that was made (a dry run writes nothing).
func succeeded(ev auditv1.Event) bool {
	return ev.Stage == auditv1.StageResponseComplete && ev.ResponseStatus != nil &&
		ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300 && !env.IsDryRun(ev)
}

// soakFault is one fault of the harness.
type soakFault struct {
	kind  string        // for the figures
	delay time.Duration // after the approval
	down  time.Duration // how long, for outages
	// point is the failpoint armed before the approval (SIGKILL faults).
	point string
}

func (f soakFault) String() string {
	switch {
	case f.point != "":
		return "SIGKILL at " + f.point
	case f.down > 0:
		return fmt.Sprintf("%s %v", f.kind, f.down.Round(100*time.Millisecond))
	}
	return f.kind
}

// soakApproval is one approved plan and how it ended.
type soakApproval struct {
	config, step string
	fault        soakFault
	phase        v1alpha1.ConfigPhase
	took         time.Duration
	expected     map[soakTarget]int
	written      map[soakTarget]int
}

type soakRun struct {
	rng      *rand.Rand
	seed     int64
	duration time.Duration
	start    time.Time
	proxy    *env.Proxy
	via      map[string]string // the server's flags through the proxy
	// direct reads the server's /metrics and profiles: one client for the
	// run, so that the soak's own connections do not add goroutines.
	direct rest.Interface

	auditOffset int64
	approvals   []soakApproval
	faults      map[string]int
	kills       map[string]int // failpoint -> times it killed the server
	killed      atomic.Bool    // the current approval's SIGKILL landed
	completed   atomic.Bool    // the current approval's plan is Completed
	unreached   map[string]int // failpoint armed but not on this plan's path
	ownEdits    map[soakTarget]int
	pauseWrites int // the server's writes to MachineConfigPools
	rv          map[soakTarget]string
	mcChanges   int // approved plans that wrote a MachineConfig
	cycles      int

	pid                           int // the server's at the last cycle boundary
	warmPid, warmCycle            int
	warmRSS, endRSS               rss
	warmGoroutines, endGoroutines float64
	warmAt                        time.Duration
	memory                        []string // RSS/heap in use (MiB) at each cycle boundary after the warm-up
}

var _ = Describe("soak", Label("soak"), Ordered, func() {
	It("cycles review → approve → rollout → drift → revert across both MachineConfig profiles under random faults", func() {
		s := newSoakRun()
		resetCluster()
		DeferCleanup(resetCluster)
		s.proxy = advisorViaProxy(nil)
		via, err := testEnv.KubeconfigVia(testEnv.AdvisorKubeconfig, s.proxy.Addr())
		Expect(err).NotTo(HaveOccurred())
		s.via = map[string]string{"--kubeconfig": via}
		s.direct = advisorDirect()
		// Both configs start reverted (and approved as such).
		for _, p := range soakProfiles {
			configWith(p.name, p.off)
			s.settle(p.name)
		}
		_, s.auditOffset, err = testEnv.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		before := testEnv.FakeMCORollouts("worker")
		s.rv = s.targetRVs()
		s.pid = testEnv.Advisor().Pid()

		for s.cycles = 0; s.more(); s.cycles++ {
			p := soakProfiles[s.cycles%len(soakProfiles)]
			began := time.Since(s.start)
			// Review → approve → rollout.
			s.setSpec(p.name, p.on)
			on := s.approveStep(p.name, "on")
			waitPoolSettled("00-worker", p.mc)
			// Drift by hand → review → approve the correction.
			s.drift(p)
			drift := s.approveStep(p.name, "drift")
			// Revert: the spec without the MachineConfig → approve → rollout.
			s.setSpec(p.name, p.off)
			off := s.approveStep(p.name, "revert")
			waitPoolSettled("00-worker")
			GinkgoWriter.Printf("soak %v cycle %d %s: on %v [%v], drift %v [%v], revert %v [%v]\n", began.Round(time.Second), s.cycles+1, p.name,
				on.took.Round(100*time.Millisecond), on.fault, drift.took.Round(100*time.Millisecond), drift.fault, off.took.Round(100*time.Millisecond), off.fault)
			s.noteMemory()
			s.maybeWarmUp()
		}

		Expect(testEnv.Advisor().Pid()).To(Equal(s.warmPid), "the server measured at the warm-up serves to the end")
		s.endRSS, s.endGoroutines = s.sampleServer("end", s.warmGoroutines)
		rollouts, nodes := rolloutsSince(before)
		s.report(rollouts, nodes)

		// Every approved plan ended Completed (approveStep fails at once
		// otherwise), and wrote each approved item exactly once.
		for _, a := range s.approvals {
			Expect(a.phase).To(Equal(v1alpha1.PhaseCompleted), "%s %s", a.config, a.step)
			Expect(a.written).To(Equal(a.expected), "%s %s under %v: writes by the server per target", a.config, a.step, a.fault)
		}
		s.expectManagedFieldsOurs()
		Expect(rollouts).To(Equal(s.mcChanges), "one rollout per approved MachineConfig change")
		Expect(nodes).To(HaveLen(3))
		for i, n := range nodes {
			Expect(n).To(Equal(rollouts), "node %d: one update per rollout", i)
		}
		Expect(s.endRSS.total-s.warmRSS.total).To(BeNumerically("<=", soakRSSGrowth), "RSS growth of the server after its warm-up: %v -> %v", s.warmRSS, s.endRSS)
		Expect(s.endGoroutines-s.warmGoroutines).To(BeNumerically("<=", soakGoroutineTolerance), "goroutine growth of the server after its warm-up")
	})
})

func newSoakRun() *soakRun {
	GinkgoHelper()
	s := &soakRun{duration: 20 * time.Minute, start: time.Now(), faults: map[string]int{}, kills: map[string]int{},
		unreached: map[string]int{}, ownEdits: map[soakTarget]int{}}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		Expect(err).NotTo(HaveOccurred(), "SOAK_DURATION=%q: want a duration such as 20m", v)
		Expect(d).To(BeNumerically(">", 0), "SOAK_DURATION must be positive")
		s.duration = d
	}
	s.seed = time.Now().UnixNano()
	if v := os.Getenv("SOAK_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		Expect(err).NotTo(HaveOccurred(), "SOAK_SEED=%q: want an integer", v)
		s.seed = seed
	}
	s.rng = rand.New(rand.NewSource(s.seed))
	msg := fmt.Sprintf("soak for %v, seed %d (replay: make soak SOAK_SEED=%d SOAK_DURATION=%v)", s.duration, s.seed, s.seed, s.duration)
	GinkgoWriter.Println(msg)
	AddReportEntry("soak seed", msg)
	return s
}

// setSpec replaces the config's spec (a review is then required).
func (s *soakRun) setSpec(name, spec string) {
	GinkgoHelper()
	var want v1alpha1.VirtPlatformConfigSpec
	Expect(json.Unmarshal([]byte(spec), &want)).To(Succeed())
	Eventually(func() error {
		c, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec = want
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Update(suiteCtx, c, metav1.UpdateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	s.waitPhase(name, v1alpha1.PhaseReviewRequired, "", time.Minute)
}

// drift edits the profile's managed field by hand and waits until the
// server reports the drift.
func (s *soakRun) drift(p soakProfile) {
	GinkgoHelper()
	s.checkIdle()
	target, patch := p.driftPatch(s.rng.Int())
	_, err := dyn().Resource(target.gvr()).Namespace(target.namespace).
		Patch(suiteCtx, target.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: soakDriftManager})
	Expect(err).NotTo(HaveOccurred())
	s.ownEdits[target]++
	c := s.waitPhase(p.name, v1alpha1.PhaseDrifted, "", time.Minute)
	Expect(item(c, p.driftItem).Message).NotTo(BeEmpty())
	s.readAudit(nil) // the edit, outside any approval
	s.rv = s.targetRVs()
}

// approveStep reviews the plan, approves it under a random fault and
// waits until it is Completed; it records what it expected written and
// what the server wrote.
func (s *soakRun) approveStep(name, step string) soakApproval {
	GinkgoHelper()
	s.checkIdle()
	plan := getPlan(name)
	a := soakApproval{config: name, step: step, expected: map[soakTarget]int{}, written: map[soakTarget]int{}}
	writes, mc := 0, false
	for _, it := range plan.Status.Items {
		Expect(it.Error).To(BeEmpty(), "%s %s: item %s", name, step, it.Name)
		if it.Operation == v1alpha1.OperationNone || it.Operation == "" {
			continue
		}
		a.expected[targetOf(it.TargetRef)]++
		writes++
		mc = mc || it.TargetRef.Kind == "MachineConfig"
	}
	Expect(writes).To(BeNumerically(">", 0), "%s %s: the plan writes nothing", name, step)
	if mc {
		s.mcChanges++
	}
	a.fault = s.pickFault(writes, mc)
	s.faults[a.fault.kind]++
	s.readAudit(nil) // nothing of the server's since the last approval
	if a.fault.point != "" {
		Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{failpoint.EnvVar + "=" + a.fault.point}, s.via)).To(Succeed())
	}

	start := time.Now()
	s.killed.Store(false)
	s.completed.Store(false)
	Expect(approve(advisor, name, plan.Status.PlanHash)).To(Succeed(), "%s %s", name, step)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		s.inject(a.fault)
	}()
	c := s.waitPhase(name, v1alpha1.PhaseCompleted, plan.Status.PlanHash, 5*time.Minute)
	a.took = time.Since(start)
	s.completed.Store(true)
	Eventually(done).WithTimeout(2 * time.Minute).Should(BeClosed())
	if a.fault.point != "" {
		if s.killed.Load() {
			s.kills[a.fault.point]++ // and restarted disarmed
		} else {
			// Not on this plan's path: disarm it.
			s.unreached[a.fault.point]++
			Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, s.via)).To(Succeed())
		}
	}
	a.phase = c.Status.Phase
	s.readAudit(a.written)
	s.rv = s.targetRVs()
	s.approvals = append(s.approvals, a)
	return a
}

// pickFault draws the fault of one approval. SIGKILLs of the server come
// only in the first half of the run, so that the process measured for
// memory and goroutines lives through the second half.
func (s *soakRun) pickFault(writes int, mc bool) soakFault {
	// The same draws every time, so that a seed replays the same faults.
	kinds := []string{"none", "kube-apiserver restart", "etcd restart", "proxy stall", "proxy drop", "SIGKILL"}
	kind, delay, fraction, pick := kinds[s.rng.Intn(len(kinds))], s.rng.Int63n(int64(1500*time.Millisecond)), s.rng.Float64(), s.rng.Intn(6)
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(fraction*float64(hi-lo)) }
	f := soakFault{kind: kind, delay: time.Duration(delay)}
	switch kind {
	case "kube-apiserver restart":
		f.down = between(2*time.Second, 20*time.Second)
	case "etcd restart":
		f.down = between(time.Second, 5*time.Second)
	case "proxy stall", "proxy drop":
		f.down = between(2*time.Second, 15*time.Second)
	case "SIGKILL":
		if time.Since(s.start) >= s.duration/2 {
			return soakFault{kind: "none (no SIGKILL in the second half)"}
		}
		points := []string{"after-write"}
		if writes > 1 {
			points = append(points, "after-write@2")
		}
		if mc {
			points = append(points, "after-pool-pause")
		}
		f.point = points[pick%len(points)]
	}
	return f
}

// inject runs a fault a random moment (up to 1.5 s) after the approval,
// while the plan is written and rolled out. A SIGKILL fault was armed
// before the approval; inject waits until the server died at its point,
// or the plan completed without passing it.
func (s *soakRun) inject(f soakFault) {
	if f.point == "" {
		time.Sleep(f.delay)
	}
	switch f.kind {
	case "kube-apiserver restart":
		Expect(testEnv.RestartKubeAPIServer(suiteCtx, f.down)).To(Succeed())
	case "etcd restart":
		Expect(testEnv.RestartEtcd(suiteCtx, f.down)).To(Succeed())
	case "proxy stall":
		s.proxy.Stall()
		time.Sleep(f.down)
		s.proxy.Resume()
	case "proxy drop":
		s.proxy.Drop()
		time.Sleep(f.down)
		s.proxy.Resume()
	case "SIGKILL":
		adv := testEnv.Advisor()
		for !adv.Exited() && !s.completed.Load() {
			time.Sleep(50 * time.Millisecond)
		}
		if adv.Exited() {
			// Killed at its point: it comes back disarmed and the plan
			// goes on.
			Expect(adv.LogTail(20)).To(ContainSubstring("failpoint " + strings.Split(f.point, "@")[0]))
			s.killed.Store(true)
			Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, s.via)).To(Succeed())
		}
	}
}

// waitPhase polls through kube-apiserver, across outages, until the
// config is in phase (with that approval, when planHash is set); a phase
// that cannot lead there fails at once.
func (s *soakRun) waitPhase(name string, phase v1alpha1.ConfigPhase, planHash string, timeout time.Duration) *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var last *v1alpha1.VirtPlatformConfig
	var lastErr error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			time.Sleep(250 * time.Millisecond)
			continue
		}
		last = c
		approved := planHash == "" || (c.Status.Approval != nil && c.Status.Approval.PlanHash == planHash)
		if c.Status.Phase == phase && approved && c.Status.ObservedGeneration == c.Generation {
			return c
		}
		if approved && planHash != "" && (c.Status.Phase == v1alpha1.PhaseFailed || c.Status.Phase == v1alpha1.PhaseCompletedWithErrors) {
			Fail(fmt.Sprintf("%s: an approved plan ended %s (seed %d): %s", name, c.Status.Phase, s.seed, describeStatus(c)))
		}
		time.Sleep(250 * time.Millisecond)
	}
	Fail(fmt.Sprintf("%s: not %s after %v (seed %d; last error %v): %s", name, phase, timeout, s.seed, lastErr, describeStatus(last)))
	return nil
}

// settle approves a config's plan, if it needs a review, and waits until
// it is Completed.
func (s *soakRun) settle(name string) {
	GinkgoHelper()
	Eventually(func() v1alpha1.ConfigPhase { return getConfig(name).Status.Phase }).WithTimeout(time.Minute).
		Should(BeElementOf(v1alpha1.PhaseReviewRequired, v1alpha1.PhaseCompleted))
	if getConfig(name).Status.Phase == v1alpha1.PhaseReviewRequired {
		Expect(approve(advisor, name, planHashOf(name))).To(Succeed())
	}
	s.waitPhase(name, v1alpha1.PhaseCompleted, "", 2*time.Minute)
	waitPoolSettled("00-worker")
}

// readAudit reads the audit log on. Writes by the server to the targets
// are added to written (nil: there must be none, no plan is approved);
// writes by anyone else to the targets must be the soak's own edits.
func (s *soakRun) readAudit(written map[soakTarget]int) {
	GinkgoHelper()
	events, next, err := testEnv.AuditEvents(s.auditOffset)
	Expect(err).NotTo(HaveOccurred())
	s.auditOffset = next
	for _, ev := range events {
		if !succeeded(ev) {
			continue
		}
		if ev.User.Username == advisorUser && ev.ObjectRef != nil && ev.ObjectRef.Resource == "machineconfigpools" {
			s.pauseWrites++
			continue
		}
		t, ok := auditTarget(ev)
		if !ok {
			continue
		}
		switch {
		case ev.User.Username == advisorUser && written != nil:
			written[t]++
		case ev.User.Username == advisorUser:
			Fail(fmt.Sprintf("the server wrote %v (%s %s) while no plan was approved (seed %d)", t, ev.Verb, ev.RequestURI, s.seed))
		default:
			Expect(fieldManagerOf(ev)).To(Equal(soakDriftManager), "%s wrote %v (%s %s): only the server and the soak's drift write to the targets", ev.User.Username, t, ev.Verb, ev.RequestURI)
		}
	}
}

func fieldManagerOf(ev auditv1.Event) string {
	_, query, _ := strings.Cut(ev.RequestURI, "?")
	for _, kv := range strings.Split(query, "&") {
		if k, v, _ := strings.Cut(kv, "="); k == "fieldManager" {
			return v
		}
	}
	return ""
}

// targetRVs are the targets' resourceVersions ("" for absent ones).
func (s *soakRun) targetRVs() map[soakTarget]string {
	GinkgoHelper()
	rvs := map[soakTarget]string{}
	for _, t := range soakTargets {
		obj, err := get(t.gvr(), t.namespace, t.name)
		if apierrors.IsNotFound(err) {
			rvs[t] = ""
			continue
		}
		Expect(err).NotTo(HaveOccurred())
		rvs[t] = obj.GetResourceVersion()
	}
	return rvs
}

// checkIdle: nothing changed the targets since the last step ended.
func (s *soakRun) checkIdle() {
	GinkgoHelper()
	Expect(s.targetRVs()).To(Equal(s.rv), "the targets changed while no plan was approved and the soak edited nothing (seed %d)", s.seed)
}

// maybeWarmUp samples the server once, at the first cycle boundary in the
// second half of the run (no SIGKILLs any more) after it served a whole
// cycle.
func (s *soakRun) maybeWarmUp() {
	GinkgoHelper()
	pid := testEnv.Advisor().Pid()
	defer func() { s.pid = pid }()
	if s.warmPid != 0 || time.Since(s.start) < s.duration/2 || pid != s.pid {
		return
	}
	s.warmPid, s.warmAt, s.warmCycle = pid, time.Since(s.start), s.cycles+1 // cycles done
	s.warmRSS, s.warmGoroutines = s.sampleServer("warm-up", 0)
	GinkgoWriter.Printf("soak warm-up at %v: pid %d, RSS %v, %v goroutines\n", s.warmAt.Round(time.Second), pid, s.warmRSS, s.warmGoroutines)
}

// more: the run goes on until its duration is over and at least one
// whole cycle ran after the warm-up.
func (s *soakRun) more() bool {
	return time.Since(s.start) < s.duration || s.warmPid == 0 || s.cycles <= s.warmCycle
}

// sampleServer reads the server's RSS and goroutines once it settled:
// after the last fault, watches that failed wait up to 30 s (client-go's
// backoff) before they watch again, each with its goroutines, so it waits
// soakSettle first. Then goroutines of requests in flight come and go: it
// takes the fewest of scrapes 2 s apart, for 10 s, or up to a minute while
// above settled (when > 0). The goroutines' stacks and the heap profile go
// to _output/e2e-artifacts/soak-{goroutines,heap}-<when>.*, to compare
// when they grew.
func (s *soakRun) sampleServer(when string, settled float64) (rss, float64) {
	GinkgoHelper()
	time.Sleep(soakSettle)
	goroutines := -1.0
	for start := time.Now(); ; time.Sleep(2 * time.Second) {
		var m env.Metrics
		Eventually(func() error {
			var err error
			m, err = env.ScrapeMetrics(suiteCtx, s.direct)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		if g := m.Sum("go_goroutines", nil); goroutines < 0 || g < goroutines {
			goroutines = g
		}
		waited := time.Since(start)
		if waited >= time.Minute || (waited >= 10*time.Second && (settled <= 0 || goroutines <= settled)) {
			break
		}
	}
	dir := filepath.Join(testEnv.RepoRoot, "_output", "e2e-artifacts")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for file, path := range map[string]string{"soak-goroutines-" + when + ".txt": "/debug/pprof/goroutine?debug=1", "soak-heap-" + when + ".pb.gz": "/debug/pprof/heap"} {
		p, query, _ := strings.Cut(path, "?")
		req := s.direct.Get().AbsPath(p)
		if k, v, ok := strings.Cut(query, "="); ok {
			req = req.Param(k, v)
		}
		profile, err := req.DoRaw(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, file), profile, 0o644)).To(Succeed())
	}
	return rssOf(testEnv.Advisor().Pid()), goroutines
}

// noteMemory records the server's RSS and Go heap in use at a cycle
// boundary after the warm-up: the figures show whether memory levels off.
func (s *soakRun) noteMemory() {
	GinkgoHelper()
	if s.warmPid == 0 {
		return
	}
	m, err := env.ScrapeMetrics(suiteCtx, s.direct)
	Expect(err).NotTo(HaveOccurred())
	s.memory = append(s.memory, fmt.Sprintf("%.0f/%.0f", mib(rssOf(testEnv.Advisor().Pid()).total), m.Sum("go_memstats_heap_inuse_bytes", nil)/(1<<20)))
}

// rss is a process's resident memory, in bytes: all of it (VmRSS), and
// its anonymous (Go heap, stacks) and file-backed (the binary, the
// embedded etcd's memory-mapped database) parts.
type rss struct{ total, anon, file int64 }

func (r rss) String() string {
	return fmt.Sprintf("%.1f MiB (anon %.1f, file %.1f)", mib(r.total), mib(r.anon), mib(r.file))
}

// rssOf reads a process's resident memory from /proc (Linux).
func rssOf(pid int) rss {
	GinkgoHelper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	Expect(err).NotTo(HaveOccurred(), "the soak reads the server's memory from /proc (Linux)")
	defer f.Close()
	var r rss
	fields := map[string]*int64{"VmRSS:": &r.total, "RssAnon:": &r.anon, "RssFile:": &r.file}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for prefix, into := range fields {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				Expect(err).NotTo(HaveOccurred())
				*into = kb << 10
			}
		}
	}
	Expect(r.total).To(BeNumerically(">", 0), "no VmRSS in /proc/%d/status", pid)
	return r
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// baselineManagers wrote the targets' baseline before the soak (the
// environment's install, the e2e reset): where the profile keeps a
// baseline value, they share the field with us. The audit log shows they
// wrote nothing during the soak.
var baselineManagers = []string{"virt-advisor-testenv", "e2e-reset"}

// expectManagedFieldsOurs: the managed fields of the targets that remain
// (the HyperConverged and the KubeDescheduler) are held by our field
// manager; the soak's drift holds none of them any more (each correction
// took them back), and nobody but the baseline's writers shares them.
func (s *soakRun) expectManagedFieldsOurs() {
	GinkgoHelper()
	for _, p := range soakProfiles {
		c := getConfig(p.name)
		for _, it := range c.Status.Items {
			if it.TargetRef.Kind == "MachineConfig" || len(it.ManagedFields) == 0 {
				continue
			}
			obj, err := get(targetOf(it.TargetRef).gvr(), it.TargetRef.Namespace, it.TargetRef.Name)
			Expect(err).NotTo(HaveOccurred())
			for _, path := range it.ManagedFields {
				owners := fieldOwners(obj, path)
				Expect(owners).To(ContainElement(ourManager), "%s %s: %s", it.TargetRef.Kind, it.TargetRef.Name, path)
				for _, o := range owners {
					Expect(o).To(BeElementOf(ourManager, baselineManagers[0], baselineManagers[1]), "%s %s: %s is also held by %s", it.TargetRef.Kind, it.TargetRef.Name, path, o)
				}
			}
		}
	}
}

// fieldOwners lists the managers holding path (dotted, e.g.
// spec.higherWorkloadDensity.memoryOvercommitPercentage) or a field below.
func fieldOwners(obj *unstructured.Unstructured, path string) []string {
	var owners []string
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil || mf.Subresource != "" {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &set) != nil {
			continue
		}
		held := true
		for _, part := range strings.Split(path, ".") {
			next, ok := set["f:"+part].(map[string]any)
			if !ok {
				held = false
				break
			}
			set = next
		}
		if held {
			owners = append(owners, mf.Manager)
		}
	}
	sort.Strings(owners)
	return owners
}

// report prints the figures of the run.
func (s *soakRun) report(rollouts int, nodes []int) {
	expected, written := 0, 0
	for _, a := range s.approvals {
		for _, n := range a.expected {
			expected += n
		}
		for _, n := range a.written {
			written += n
		}
	}
	own := 0
	for _, n := range s.ownEdits {
		own += n
	}
	var faults []string
	for _, k := range slices.Sorted(maps.Keys(s.faults)) {
		faults = append(faults, fmt.Sprintf("%s %d", k, s.faults[k]))
	}
	var kills []string
	for _, k := range slices.Sorted(maps.Keys(s.kills)) {
		kills = append(kills, fmt.Sprintf("%s %d", k, s.kills[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.unreached)) {
		kills = append(kills, fmt.Sprintf("%s armed, not on the plan's path %d", k, s.unreached[k]))
	}
	updates := 0
	for _, n := range nodes {
		updates += n
	}
	figures := fmt.Sprintf(`soak figures (seed %d, %v, duration %v):
  cycles %d, approved plans %d (all Completed)
  faults: %s
  SIGKILLs: %s
  writes by the server to the targets %d (approved items %d), MachineConfigPool pause/unpause writes %d, the soak's own drift edits %d
  rollouts %d (approved MachineConfig changes %d), node updates %d = %d rollouts x %d nodes %v
  server RSS %v at the warm-up (%v in) -> %v at the end (%+.1f MiB; bound +%d MiB)
  server RSS/heap in use (MiB) after each cycle since the warm-up: %s
  server goroutines %v -> %v (settled; tolerance +%d)`,
		s.seed, time.Since(s.start).Round(time.Second), s.duration, s.cycles, len(s.approvals), strings.Join(faults, ", "), strings.Join(kills, ", "),
		written, expected, s.pauseWrites, own, rollouts, s.mcChanges, updates, rollouts, len(nodes), nodes,
		s.warmRSS, s.warmAt.Round(time.Second), s.endRSS, mib(s.endRSS.total-s.warmRSS.total), soakRSSGrowth>>20, strings.Join(s.memory, " "), s.warmGoroutines, s.endGoroutines, soakGoroutineTolerance)
	GinkgoWriter.Println(figures)
	AddReportEntry("soak figures", figures)
}
