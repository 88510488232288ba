package e2e

import (
	"bytes"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// scrape reads and parses virt-advisor-apiserver's /metrics.
func scrape(g Gomega) map[string]*dto.MetricFamily {
	raw, err := advisorDirect().Get().AbsPath("/metrics").DoRaw(suiteCtx)
	g.Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// samples returns the values of the series of a family whose labels
// include want.
func samples(families map[string]*dto.MetricFamily, name string, want map[string]string) []float64 {
	var out []float64
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			out = append(out, m.GetGauge().GetValue())
		case m.Counter != nil:
			out = append(out, m.GetCounter().GetValue())
		}
	}
	return out
}

// perConfigFamilies are reported for each config while it exists.
var perConfigFamilies = []string{
	"virt_advisor_config_phase", "virt_advisor_config_phase_since_timestamp_seconds",
	"virt_advisor_config_rollout_started_timestamp_seconds", "virt_advisor_config_wait_timeout_seconds",
	"virt_advisor_config_write_waiting_since_timestamp_seconds",
}

var _ = Describe("per-config metrics", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("reports a config's phase, rollout and waitTimeout, and no series once it is deleted", func() {
		const name = "load-aware-rebalancing"
		// A slow pool: the rollout goes on while the metrics are read;
		// resetCluster makes it fast again.
		setPool(`{"metadata":{"annotations":{"` + fakemco.StepTimeAnnotation + `":"20s"}}}`)
		start := float64(time.Now().Add(-time.Second).Unix())
		configWith(name, `{"profile":"load-aware-rebalancing","action":"Apply","waitTimeout":"30m"}`)
		Eventually(func() string { return itemMessage(name, "enable-psi-metrics") }).
			WithTimeout(20 * time.Second).Should(MatchRegexp(`^MachineConfigPool 'worker' is (paused by virt-advisor|processing|updating)`))
		Expect(getConfig(name).Status.Phase).To(Equal(v1alpha1.PhaseInProgress))

		config := map[string]string{"name": name, "profile": name}
		inProgress := map[string]string{"name": name, "profile": name, "phase": "InProgress"}
		psi := map[string]string{"name": name, "profile": name, "item": "enable-psi-metrics"}
		Eventually(func(g Gomega) {
			m := scrape(g)
			g.Expect(samples(m, "virt_advisor_config_phase", config)).To(Equal([]float64{1}), "one phase only")
			g.Expect(samples(m, "virt_advisor_config_phase", inProgress)).To(Equal([]float64{1}))
			g.Expect(samples(m, "virt_advisor_configs", map[string]string{"profile": name, "phase": "InProgress"})).To(Equal([]float64{1}))
			since := samples(m, "virt_advisor_config_phase_since_timestamp_seconds", inProgress)
			g.Expect(since).To(HaveLen(1))
			g.Expect(since[0]).To(BeNumerically(">=", start))
			started := samples(m, "virt_advisor_config_rollout_started_timestamp_seconds", psi)
			g.Expect(started).To(HaveLen(1))
			g.Expect(started[0]).To(And(BeNumerically(">=", start), BeNumerically("<=", float64(time.Now().Unix()+1))))
			g.Expect(samples(m, "virt_advisor_config_rollout_started_timestamp_seconds",
				map[string]string{"item": "enable-load-aware-descheduling"})).To(BeEmpty(), "only MachineConfigs roll out")
			g.Expect(samples(m, "virt_advisor_config_wait_timeout_seconds", config)).To(Equal([]float64{1800}))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		deleteConfig(name)
		Eventually(func(g Gomega) {
			m := scrape(g)
			for _, family := range perConfigFamilies {
				g.Expect(samples(m, family, map[string]string{"name": name})).To(BeEmpty(), family)
			}
			g.Expect(samples(m, "virt_advisor_configs", map[string]string{"profile": name})).To(BeEmpty())
			// Every other config is still reported.
			others, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().List(suiteCtx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, o := range others.Items {
				g.Expect(samples(m, "virt_advisor_config_phase", map[string]string{"name": o.Name})).To(HaveLen(1), o.Name)
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("counts plans with an item the cluster refuses, and the last plan made without error", func() {
		const name = "load-aware-rebalancing"
		profile := map[string]string{"profile": name}
		var errorsBefore float64
		Eventually(func(g Gomega) {
			m := scrape(g)
			errs := samples(m, "virt_advisor_plan_errors_total", profile)
			g.Expect(errs).To(HaveLen(1), "every profile's counter exists from the start")
			errorsBefore = errs[0]
			g.Expect(samples(m, "virt_advisor_plan_last_success_timestamp_seconds", profile)).To(HaveLen(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		configWith(name, `{"profile":"load-aware-rebalancing"}`)
		waitPhase(name, v1alpha1.PhaseReviewRequired, 15*time.Second)
		afterGoodPlan := float64(time.Now().Unix())
		Expect(planItem(getPlan(name), "enable-psi-metrics").Error).To(BeEmpty())
		Eventually(func(g Gomega) {
			last := samples(scrape(g), "virt_advisor_plan_last_success_timestamp_seconds", profile)
			g.Expect(last).To(HaveLen(1))
			g.Expect(last[0]).To(BeNumerically(">=", afterGoodPlan-1))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		denyPSIMachineConfig()
		Eventually(func() string { return planItem(getPlan(name), "enable-psi-metrics").Error }).
			WithTimeout(15 * time.Second).Should(ContainSubstring("PSI is forbidden on this cluster"))
		Eventually(func(g Gomega) []float64 {
			return samples(scrape(g), "virt_advisor_plan_errors_total", profile)
		}).WithTimeout(10 * time.Second).Should(ConsistOf(BeNumerically(">", errorsBefore)))
	})
})
