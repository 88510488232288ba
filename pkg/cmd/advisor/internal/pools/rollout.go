package pools

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// Gates says the gates in force between the node reboots of a plan's
// rollouts, e.g. `node back within 20m0s, 0 failed migrations, soak 0s,
// alerts: Prometheus https://… severity="critical" (ignoring Watchdog,
// InfoInhibitor; on error Hold)`; "" when there are none (the plan rolls
// no pool).
func Gates(g *v1alpha1.PlanGates) string {
	if g == nil {
		return ""
	}
	migrations := "migrations"
	if g.MaxFailedMigrations == 1 {
		migrations = "migration"
	}
	s := fmt.Sprintf("node back within %s, %d failed %s, soak %s, ", orDash(g.NodeReadyTimeout), g.MaxFailedMigrations, migrations, orDash(g.Soak))
	if g.Alerts == nil {
		return s + "no alert gate"
	}
	return s + "alerts: " + alertGate(g.Alerts)
}

// alertGate says which alerts halt a rollout, read where, and what an
// alert source that cannot be read does.
func alertGate(a *v1alpha1.PlanAlertGate) string {
	which := strings.Join(a.Matchers, ", ")
	if which == "" {
		which = "any alert"
	}
	var terms []string
	if a.Source == gates.NoAlertSource || a.Source == "" {
		terms = append(terms, "the server reads no alerts: --alert-source-url is not set")
	} else {
		which = a.Source + " " + which
	}
	if len(a.Ignore) > 0 {
		terms = append(terms, "ignoring "+strings.Join(a.Ignore, ", "))
	}
	onError := a.OnError
	if onError == "" {
		onError = v1alpha1.GateErrorHold
	}
	terms = append(terms, "on error "+string(onError))
	return which + " (" + strings.Join(terms, "; ") + ")"
}

// Halt is a pool's halted rollout (machineconfig.PoolHalt) as the plugin
// and the dashboard show it.
type Halt struct {
	Pool, Gate, Node, Message string
	Evidence                  []string
	At                        time.Time
	// End says what ends the halt, for the config shown.
	End string
}

// ReadHalt is the halt recorded on pool, nil when there is none; cfg is
// the config shown, whose name End gives the commands for.
func ReadHalt(pool *unstructured.Unstructured, cfg *v1alpha1.VirtPlatformConfig) *Halt {
	h := machineconfig.ReadHalt(pool)
	if h == nil {
		return nil
	}
	return &Halt{Pool: pool.GetName(), Gate: h.Gate, Node: h.Node, Message: h.Message, Evidence: h.Evidence, At: h.At, End: haltEnd(h, cfg)}
}

// Headline is "pool worker: gate nodeBack tripped on node worker-1 at
// 2026-11-23T10:20:00Z".
func (h *Halt) Headline() string {
	s := "pool " + h.Pool + ": gate " + h.Gate + " tripped"
	if h.Node != "" {
		s += " on node " + h.Node
	}
	if !h.At.IsZero() {
		s += " at " + h.At.UTC().Format(time.RFC3339)
	}
	return s
}

// haltEnd says who ends the halt h, and how, to a reader of config cfg:
// an approval of a config the halt names (a resume), that config's abort
// or revert; an abort since the halt holds the pool on its own.
func haltEnd(h *machineconfig.PoolHalt, cfg *v1alpha1.VirtPlatformConfig) string {
	name := cfg.Name
	seq, named := h.Approvals[name]
	switch {
	case len(h.Approvals) == 0:
		return "The halt names no approval: the rollout stays halted until the configs rolling out on the pool are aborted, reverted or deleted, or someone removes the annotation " +
			machineconfig.HaltAnnotation + " from it."
	case !named:
		others := make([]string, 0, len(h.Approvals))
		for n := range h.Approvals {
			others = append(others, n)
		}
		slices.Sort(others)
		whose := "config " + others[0] + " again"
		if len(others) > 1 {
			whose = "one of the configs " + strings.Join(others, ", ") + " again"
		}
		return fmt.Sprintf("The halt is of another config's rollout: it stays halted until an approver approves the plan of %s to resume (kubectl advisor approve %s), or aborts or reverts it.",
			whose, others[0])
	case cfg.Status.Abort != nil && cfg.Status.Abort.ApprovalSequence >= seq:
		return fmt.Sprintf("Plan %s was aborted since: the abort holds the pool paused until an approver approves a plan of this config again (kubectl advisor approve %s), or the config is deleted.",
			v1alpha1.ShortHash(cfg.Status.Abort.PlanHash), name)
	}
	return fmt.Sprintf("The rollout stays halted until an approver approves the plan again to resume (kubectl advisor approve %s), or aborts or reverts it (kubectl advisor abort %s, kubectl advisor revert %s).",
		name, name, name)
}

// Step is the step of a pool's rollout in flight (machineconfig.PoolStep).
type Step struct {
	Pool    string
	Nodes   []string
	Started time.Time
}

// ReadStep is the step recorded on pool, nil when there is none.
func ReadStep(pool *unstructured.Unstructured) *Step {
	s := machineconfig.ReadStep(pool)
	if s == nil {
		return nil
	}
	return &Step{Pool: pool.GetName(), Nodes: s.Nodes, Started: s.Started}
}

// Line is "pool worker: node(s) worker-1 in the step since
// 2026-11-23T10:00:00Z".
func (s *Step) Line() string {
	line := "pool " + s.Pool + ": node(s) " + strings.Join(s.Nodes, ", ") + " in the step"
	if !s.Started.IsZero() {
		line += " since " + s.Started.UTC().Format(time.RFC3339)
	}
	return line
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
