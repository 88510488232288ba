package e2e

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

const noPSI = `{"profile":"load-aware-rebalancing","action":"Apply","options":{"loadAware":{"enablePSIMetrics":false}}}`

func condition(c *v1alpha1.VirtPlatformConfig, t string) metav1.Condition {
	GinkgoHelper()
	cond := meta.FindStatusCondition(c.Status.Conditions, t)
	Expect(cond).NotTo(BeNil(), "condition %s", t)
	return *cond
}

func setAction(name, action string) {
	GinkgoHelper()
	_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, name, types.MergePatchType,
		[]byte(`{"spec":{"action":"`+action+`"}}`), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("drift", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("follows the earlier operator's drift workflow (docs/design.md, Drift): drift and an input change need review; a spec change acknowledges them", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":1800,"profileCustomizations":{"devEnableSoftTainter":false}}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 5*time.Second)
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":12}}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		drift := condition(c, "InputDependencyDrift")
		Expect(drift.Status).To(Equal(metav1.ConditionTrue))
		Expect(drift.Reason).To(Equal("InputChanged"))
		Expect(drift.Message).To(Equal("Input dependency changed: HCO parallelMigrationsPerCluster changed (scaled 5 -> 11)"))
		Consistently(func() v1alpha1.ConfigPhase { return getConfig("load-aware-rebalancing").Status.Phase }).
			WithTimeout(2*time.Second).Should(Equal(v1alpha1.PhaseReviewRequired), "review is required even with action Apply")

		kd := planItem(getPlan("load-aware-rebalancing"), "enable-load-aware-descheduling")
		Expect(kd.Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 1800\n+  deschedulingIntervalSeconds: 60\n"))
		Expect(kd.Diff).To(ContainSubstring("-    devEnableSoftTainter: false\n+    devEnableSoftTainter: true\n"))
		Expect(kd.Diff).To(ContainSubstring("-    total: 5\n+    total: 11\n"))

		setAction("load-aware-rebalancing", "DryRun")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		setAction("load-aware-rebalancing", "Apply")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(condition(c, "InputDependencyDrift").Reason).To(Equal("Acknowledged"))
		for _, it := range getPlan("load-aware-rebalancing").Status.Items {
			Expect(it.Diff).To(HaveSuffix("(no changes)\n"), it.Name)
		}
		live := getObject(kdGVR, kdNS, "cluster")
		Expect(nested(live.Object, "spec", "deschedulingIntervalSeconds")).To(BeEquivalentTo(60))
		Expect(nested(live.Object, "spec", "profileCustomizations", "devEnableSoftTainter")).To(Equal(true))
		Expect(nested(live.Object, "spec", "evictionLimits", "total")).To(BeEquivalentTo(11))
	})

	It("resolves an input change that is reverted", func() {
		configWith("load-aware-rebalancing", noPSI)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":10}}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		Expect(condition(c, "InputDependencyDrift").Message).To(Equal("Input dependency changed: HCO parallelMigrationsPerCluster changed (scaled 5 -> 10)"))
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":5}}}`)
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 10*time.Second)
		Expect(condition(c, "InputDependencyDrift").Reason).To(Equal("DriftResolved"))
	})

	It("detects drift of a managed field within 2s, clears it when reverted by hand, and ignores unmanaged fields", func() {
		configWith("load-aware-rebalancing", noPSI)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"logLevel":"Debug"}}`)
		Consistently(func() v1alpha1.ConfigPhase { return getConfig("load-aware-rebalancing").Status.Phase }).
			WithTimeout(3*time.Second).Should(Equal(v1alpha1.PhaseCompleted), "logLevel is not ours")

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Predictive"}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 2*time.Second)
		Expect(condition(c, "Drifted").Reason).To(Equal("DriftDetected"))
		Expect(item(c, "enable-load-aware-descheduling").Message).To(ContainSubstring("spec.mode"))
		Expect(getPlan("load-aware-rebalancing").Status.Items).To(ContainElement(HaveField("Operation", v1alpha1.OperationUpdate)))

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Automatic"}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 2*time.Second)
		Eventually(func() []string { return eventReasons("load-aware-rebalancing") }).WithTimeout(5 * time.Second).
			Should(ContainElements("Drifted", "DriftResolved"))
	})

	It("brings a config deleted and created again with action Apply to Completed each time, and back to Completed from a drift reverted as soon as it is seen", func() {
		// As the bench's steps do: each config replaces one that wrote
		// another interval, and each drift is reverted at once (issue 24:
		// once a config stayed Drifted).
		const cycles = 10
		for i := 1; i <= cycles; i++ {
			By(fmt.Sprintf("cycle %d of %d", i, cycles))
			interval := 60 // the profile's default
			spec := noPSI
			if i%2 == 1 {
				interval = 120 + i
				spec = fmt.Sprintf(`{"profile":"load-aware-rebalancing","action":"Apply","options":{"loadAware":{"enablePSIMetrics":false,"deschedulingIntervalSeconds":%d}}}`, interval)
			}
			configWith("load-aware-rebalancing", spec)
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
			Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")).To(BeEquivalentTo(interval))
			Consistently(func() v1alpha1.ConfigPhase { return getConfig("load-aware-rebalancing").Status.Phase }).
				WithTimeout(time.Second).Should(Equal(v1alpha1.PhaseCompleted), "nothing of the deleted config changes the target after its replacement wrote")

			patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Predictive"}}`)
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 5*time.Second)
			patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Automatic"}}`)
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 5*time.Second)
		}
	})

	It("corrects drift by itself with action Apply and bypassOptimisticLock", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","bypassOptimisticLock":true,"options":{"loadAware":{"enablePSIMetrics":false}}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":999}}`)
		Eventually(func() interface{} {
			return nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")
		}).WithTimeout(10 * time.Second).Should(BeEquivalentTo(60))
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 10*time.Second)
		Expect(eventReasons("load-aware-rebalancing")).To(ContainElement("DriftCorrection"))
	})

	It("reports a deleted managed MachineConfig as drift; the plan creates it again", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(dyn().Resource(mcGVR).Delete(suiteCtx, "99-worker-psi-karg", metav1.DeleteOptions{})).To(Succeed())
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 5*time.Second)
		Expect(item(c, "enable-psi-metrics").Message).To(ContainSubstring("deleted"))
		Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Operation).To(Equal(v1alpha1.OperationCreate))
	})

	It("offers an upgrade when this build's profile logic differs from what was applied", func() {
		configWith("load-aware-rebalancing", noPSI)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		// Pretend an older build applied other eviction limits (and the cluster has them).
		old := rawJSONMap(item(c, "enable-load-aware-descheduling").DesiredState.Raw)
		old["spec"].(map[string]interface{})["evictionLimits"] = map[string]interface{}{"total": 4, "node": 2}
		raw, _ := json.Marshal(old)
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"evictionLimits":{"total":4}}}`)
		// Status takes no writes over the API: stand in for the older build
		// by editing what it would have stored.
		Expect(testEnv.Advisor().EditStoredConfig(suiteCtx, "load-aware-rebalancing", func(obj map[string]any) error {
			st := obj["status"].(map[string]any)
			st["operatorVersion"] = "v0.0.1-older"
			for _, list := range []string{"items", "appliedItems"} {
				for _, it := range st[list].([]any) {
					if it := it.(map[string]any); it["name"] == "enable-load-aware-descheduling" {
						it["desiredState"] = json.RawMessage(raw)
					}
				}
			}
			return nil
		})).To(Succeed())
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompletedWithUpgrade, 10*time.Second)
		up := condition(c, "UpgradeAvailable")
		Expect(up.Status).To(Equal(metav1.ConditionTrue))
		Expect(up.Reason).To(Equal("LogicChanged"))
		Expect(up.Message).To(ContainSubstring("enable-load-aware-descheduling"))

		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(condition(c, "UpgradeAvailable").Reason).To(Equal("Applied"))
		Expect(c.Status.OperatorVersion).NotTo(Equal("v0.0.1-older"))
	})
})

var _ = Describe("CRDs that come and go", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("moves on within 5s of a missing CRD being installed, and reports a removed one", func() {
		crd, err := dyn().Resource(crdGVR).Get(suiteCtx, "kubedeschedulers.operator.openshift.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		kd := getObject(kdGVR, kdNS, "cluster")
		Expect(dyn().Resource(crdGVR).Delete(suiteCtx, crd.GetName(), metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool { return getObject(crdGVR, "", crd.GetName()) == nil }).WithTimeout(30 * time.Second).Should(BeTrue())

		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":false}}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhasePrerequisiteFailed, 15*time.Second)
		Expect(condition(c, "PrerequisiteFailed").Message).To(Equal(
			"Missing required dependencies:\n  - KubeDescheduler (operator.openshift.io.v1): Please install the Descheduler Operator via OLM\n"))

		start := time.Now()
		restoreDescheduler(crd, kd)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 5*time.Second)
		GinkgoWriter.Printf("ReviewRequired %v after the CRD was created\n", time.Since(start))

		// Managed, then removed: a clear status, and the server keeps serving.
		setAction("load-aware-rebalancing", "Apply")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		kd = getObject(kdGVR, kdNS, "cluster")
		crd, err = dyn().Resource(crdGVR).Get(suiteCtx, crd.GetName(), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dyn().Resource(crdGVR).Delete(suiteCtx, crd.GetName(), metav1.DeleteOptions{})).To(Succeed())
		waitPhase("load-aware-rebalancing", v1alpha1.PhasePrerequisiteFailed, 30*time.Second)
		Expect(testEnv.Advisor().Exited()).To(BeFalse())
		expectHealthy()
		Eventually(func() bool { return getObject(crdGVR, "", crd.GetName()) == nil }).WithTimeout(30 * time.Second).Should(BeTrue())
		restoreDescheduler(crd, kd)
	})
})

func rawJSONMap(raw []byte) map[string]interface{} {
	GinkgoHelper()
	var m map[string]interface{}
	Expect(json.Unmarshal(raw, &m)).To(Succeed())
	return m
}
