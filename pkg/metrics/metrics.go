// Package metrics defines the Prometheus metrics of virt-advisor, served on
// /metrics with the API server's own.
package metrics

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const namespace = "virt_advisor"

var (
	// Approvals counts recorded approvals (the approve subresource and action Apply).
	Approvals = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Name: "approvals_total",
		Help: "Plan approvals recorded.", StabilityLevel: metrics.ALPHA,
	})
	// PlanDuration measures plan computations (the plan subresource, approvals, drafts).
	PlanDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Name: "plan_duration_seconds",
		Help: "Time to compute a live plan.", Buckets: metrics.ExponentialBuckets(0.005, 2, 12), StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// CapacityCheckDuration measures the capacity check's own computation
	// (pairing migrating VMs with their launchers, simulating the drains):
	// CPU-bound work, so its wall time bounds its CPU time from above.
	CapacityCheckDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: namespace, Name: "capacity_check_duration_seconds",
		Help: "Time the capacity check of a pool's drains computed (pairing the migrating VMs with their virt-launcher pods, simulating the drains).", Buckets: metrics.ExponentialBuckets(0.0005, 2, 14), StabilityLevel: metrics.ALPHA,
	})
	// PlanErrors counts plan computations that failed, as a whole or for
	// at least one item: either way the plan cannot be applied as is.
	PlanErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "plan_errors_total",
		Help: "Plan computations that failed, or that could not plan at least one item.", StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// PlanLastSuccess tells since when plan computations have been failing.
	PlanLastSuccess = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Name: "plan_last_success_timestamp_seconds",
		Help: "When a plan of the profile was last computed without error (the start of the server if never), in Unix seconds.", StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// ApplyDuration measures applying an approved plan, from approval to the last write.
	ApplyDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Name: "apply_duration_seconds",
		Help: "Time from the start of an apply to the last write of its items.", Buckets: metrics.ExponentialBuckets(0.01, 2, 14), StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// DriftDetections counts transitions into Drifted.
	DriftDetections = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "drift_detections_total",
		Help: "Drift detections (transitions into Drifted).", StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// DriftDetectionLatency is the time from a target's change to the Drifted status.
	DriftDetectionLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: namespace, Name: "drift_detection_seconds",
		Help: "Time from the watch event of a changed target to the Drifted status.", Buckets: metrics.ExponentialBuckets(0.005, 2, 12), StabilityLevel: metrics.ALPHA,
	})
)

// PolicyApprovals counts the approvals each ApprovalPolicy made (also
// counted in Approvals).
var PolicyApprovals = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: namespace, Name: "policy_approvals_total",
	Help: "Plan approvals made by an ApprovalPolicy, by policy.", StabilityLevel: metrics.ALPHA,
}, []string{"policy"})

// RolloutHaltedGauge is 1 while a gate holds the rollout of a
// MachineConfigPool halted (VirtAdvisorRolloutHalted alerts on it).
var RolloutHaltedGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Namespace: namespace, Name: "rollout_halted",
	Help: "1 while a gate between two steps holds the rollout of the MachineConfigPool halted, by pool and gate.", StabilityLevel: metrics.ALPHA,
}, []string{"pool", "gate"})

// RolloutsHalted reports the pools whose rollout a gate halts (pool to
// gate), all of them: the series of the others are dropped. The leader
// reports them, from the pools' records; a term's end reports none.
func (r *Recorder) RolloutsHalted(halted map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	RolloutHaltedGauge.Reset()
	for pool, gate := range halted {
		RolloutHaltedGauge.WithLabelValues(pool, gate).Set(1)
	}
}

// PoolWindowOpensIn is, per MachineConfigPool a maintenance window
// selects, the seconds until its nodes may be disrupted again (0 while
// they may).
var PoolWindowOpensIn = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Namespace: namespace, Name: "pool_maintenance_window_opens_in_seconds",
	Help:           "Seconds until the nodes of a MachineConfigPool that maintenance windows select may be disrupted again; 0 while they may.",
	StabilityLevel: metrics.ALPHA,
}, []string{"pool"})

// AdmissionPolicyInForceGauge is, per ValidatingAdmissionPolicy and
// binding the server ships (artifacts/deploy/05-admission-policy.yaml),
// 1 while the cluster holds it as shipped and 0 otherwise: the server
// writes nothing it confines meanwhile (pkg/confinement). Every replica
// reports it.
var AdmissionPolicyInForceGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Namespace: namespace, Name: "admission_policy_in_force",
	Help:           "1 while a ValidatingAdmissionPolicy or binding virt-advisor ships is in force as shipped (failurePolicy Fail, validationActions [Deny], the shipped spec), 0 when it is missing or differs: nothing it confines is written meanwhile.",
	StabilityLevel: metrics.ALPHA,
}, []string{"kind", "name"})

// AdmissionPolicyInForce reports whether a shipped policy or binding is
// in force.
func AdmissionPolicyInForce(kind, name string, inForce bool) {
	v := 0.0
	if inForce {
		v = 1
	}
	AdmissionPolicyInForceGauge.WithLabelValues(kind, name).Set(v)
}

var once sync.Once

// Register registers the metrics once; counters of each profile start at
// zero, so that a rate or an alert sees them before the first event. The
// series of the configs are registered by RegisterConfigs.
func Register(profiles ...string) {
	once.Do(func() {
		legacyregistry.MustRegister(Approvals, PlanDuration, CapacityCheckDuration, PlanErrors, PlanLastSuccess, ApplyDuration, DriftDetections, DriftDetectionLatency, PoolWindowOpensIn, PolicyApprovals, AdmissionPolicyInForceGauge, RolloutHaltedGauge)
		now := unixSeconds(time.Now())
		for _, p := range profiles {
			DriftDetections.WithLabelValues(p).Add(0)
			PlanErrors.WithLabelValues(p).Add(0)
			PlanLastSuccess.WithLabelValues(p).Set(now)
		}
	})
}

// Recorder records what the plan engine and the controller measure into
// the metrics above; the server gives one to both. The zero value is ready.
type Recorder struct {
	mu sync.Mutex
	// pools have a series of PoolWindowOpensIn.
	pools map[string]bool
}

// PlanComputed records the outcome of a plan computation of profile.
func (r *Recorder) PlanComputed(profile string, failed bool) {
	if failed {
		PlanErrors.WithLabelValues(profile).Inc()
		return
	}
	PlanLastSuccess.WithLabelValues(profile).Set(unixSeconds(time.Now()))
}

// CapacityChecked records the time a capacity check computed.
func (r *Recorder) CapacityChecked(d time.Duration) {
	CapacityCheckDuration.Observe(d.Seconds())
}

// Approved counts an approval.
func (r *Recorder) Approved() {
	Approvals.Inc()
}

// PolicyApproved counts an approval made by an ApprovalPolicy.
func (r *Recorder) PolicyApproved(policy string) {
	PolicyApprovals.WithLabelValues(policy).Inc()
}

// PlanDuration records how long a plan computation of profile took.
func (r *Recorder) PlanDuration(profile string, d time.Duration) {
	PlanDuration.WithLabelValues(profile).Observe(d.Seconds())
}

// ApplyDuration records the time from an approval of profile's plan to
// the last write of its items.
func (r *Recorder) ApplyDuration(profile string, d time.Duration) {
	ApplyDuration.WithLabelValues(profile).Observe(d.Seconds())
}

// DriftDetected counts a transition into Drifted.
func (r *Recorder) DriftDetected(profile string) {
	DriftDetections.WithLabelValues(profile).Inc()
}

// DriftLatency records the time from the watch event of a changed target
// to the Drifted status.
func (r *Recorder) DriftLatency(d time.Duration) {
	DriftDetectionLatency.Observe(d.Seconds())
}

// PoolWindows reports, per MachineConfigPool a maintenance window selects,
// the seconds until its nodes may be disrupted again (0 while they may);
// the series of pools left out (no window selects them any more) are
// dropped.
func (r *Recorder) PoolWindows(opensIn map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, s := range opensIn {
		PoolWindowOpensIn.WithLabelValues(p).Set(s)
	}
	for p := range r.pools {
		if _, ok := opensIn[p]; !ok {
			PoolWindowOpensIn.DeleteLabelValues(p)
		}
	}
	r.pools = map[string]bool{}
	for p := range opensIn {
		r.pools[p] = true
	}
}
