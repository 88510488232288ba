package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor/test/env"
)

// The Prometheus and the Alertmanager the e2e suite runs: an alert of a real
// rule over a metric the test serves fires through both APIs, is silenced,
// and resolves. What the halt gates will read between node reboots.
var _ = Describe("Prometheus and Alertmanager run by the suite", func() {
	const rules = `groups:
- name: e2e
  rules:
  - alert: E2ENodeUnhealthy
    expr: e2e_node_unhealthy > 0
    labels:
      severity: critical
    annotations:
      summary: node {{ $labels.node }} is unhealthy
`
	const reloaded = rules + `  - alert: E2EMigrationsFailed
    expr: e2e_migrations_failed > 2
    labels:
      severity: warning
`

	It("fires an alert of a real rule over the test's metric in both APIs, silences it, reloads the rules and resolves it", func() {
		m, err := testEnv.StartMonitoring(suiteCtx, env.MonitoringOptions{Rules: rules})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(m.Stop)

		node := map[string]string{"node": "worker-1"}
		alert := map[string]string{"alertname": "E2ENodeUnhealthy", "node": "worker-1"}
		m.SetMetric("e2e_node_unhealthy", node, 0)
		Consistently(func() ([]env.PrometheusAlert, error) { return m.PrometheusAlerts(suiteCtx) }).
			WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(BeEmpty())

		By("the metric crosses the rule's threshold: firing in Prometheus, active in the Alertmanager")
		m.SetMetric("e2e_node_unhealthy", node, 1)
		f, err := m.WaitFiring(suiteCtx, alert, 30*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Prometheus.Labels).To(HaveKeyWithValue("severity", "critical"))
		Expect(f.Alertmanager.Annotations).To(HaveKeyWithValue("summary", "node worker-1 is unhealthy"))
		Expect(f.Alertmanager.Labels).To(HaveKeyWithValue("job", "test"))

		By("a silence in the Alertmanager suppresses it there, not in Prometheus")
		id, err := m.Silence(suiteCtx, map[string]string{"alertname": "E2ENodeUnhealthy"}, time.Hour, "e2e")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			am, err := m.AlertmanagerAlerts(suiteCtx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(am).To(HaveLen(1))
			g.Expect(am[0].Status.State).To(Equal("suppressed"))
			g.Expect(am[0].Status.SilencedBy).To(ConsistOf(id))
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(m.ExpireSilence(suiteCtx, id)).To(Succeed())
		_, err = m.WaitFiring(suiteCtx, alert, 10*time.Second)
		Expect(err).NotTo(HaveOccurred())

		By("rules reloaded through /-/reload: a new alert fires")
		Expect(m.SetRules(suiteCtx, reloaded)).To(Succeed())
		m.SetMetric("e2e_migrations_failed", nil, 3)
		_, err = m.WaitFiring(suiteCtx, map[string]string{"alertname": "E2EMigrationsFailed"}, 30*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.SetRules(suiteCtx, "groups: [{name: x, rules: [{alert: Bad, expr: 'sum('}]}]")).To(MatchError(ContainSubstring("500")),
			"Prometheus refuses rules that do not parse")

		By("the metric back under the threshold: resolved in both")
		m.SetMetric("e2e_node_unhealthy", node, 0)
		m.DeleteMetric("e2e_migrations_failed", nil)
		Expect(m.WaitResolved(suiteCtx, map[string]string{"alertname": "E2ENodeUnhealthy"}, 30*time.Second)).To(Succeed())
		Expect(m.WaitResolved(suiteCtx, map[string]string{"alertname": "E2EMigrationsFailed"}, 30*time.Second)).To(Succeed())
	})
})
