package fleet

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// The condition rules as OCM's work agent evaluates them: `object` is the
// cluster's config. An expression that fails reads as False there, which
// for Progressing would read as Succeeded: each case must evaluate.
func TestConditionRules(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), ext.Strings())
	if err != nil {
		t.Fatal(err)
	}
	eval := func(t *testing.T, expr string, object map[string]any) any {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("compile %s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(map[string]any{"object": object})
		if err != nil {
			t.Fatalf("eval on %v: %v", object, err)
		}
		return out.Value()
	}
	const h = "ffff"
	progressingRule, degradedRule := conditionRules(h)
	delegated := map[string]any{"delegatedApproval": map[string]any{"fleetHash": h}}
	answered := func(phase string, conditions ...any) map[string]any {
		return map[string]any{"phase": phase, "delegatedFleetHash": h, "conditions": conditions}
	}
	cond := func(t, reason string) map[string]any {
		return map[string]any{"type": t, "status": "True", "reason": reason, "message": t + " says " + reason}
	}
	// The review waits for no outcome.
	if p, d := conditionRules(""); p != "false" || d != "false" {
		t.Errorf("review rules %q, %q", p, d)
	}
	for _, tc := range []struct {
		name                  string
		object                map[string]any
		progressing, degraded bool
		message               string
	}{
		{name: "approved, no status yet", object: map[string]any{"spec": delegated}, progressing: true, message: "no status yet"},
		{name: "a status written before the approval arrived (or a stale read): Completed", object: map[string]any{"spec": map[string]any{},
			"status": map[string]any{"phase": "Completed", "conditions": []any{}}}, progressing: true},
		{name: "a status of an earlier approval: Failed", object: map[string]any{"spec": delegated,
			"status": map[string]any{"phase": "Failed", "delegatedFleetHash": "eeee", "conditions": []any{}}}, progressing: true},
		{name: "approved, writing", object: map[string]any{"spec": delegated, "status": answered("InProgress", cond("InProgress", "Approved"))},
			progressing: true, message: "InProgress: InProgress says Approved"},
		{name: "approved, done", object: map[string]any{"spec": delegated, "status": answered("Completed")}},
		{name: "approved, failed", object: map[string]any{"spec": delegated, "status": answered("Failed")}, progressing: true, degraded: true},
		{name: "approved, aborted", object: map[string]any{"spec": delegated, "status": map[string]any{"phase": "Aborted", "delegatedFleetHash": h}}, progressing: true, degraded: true},
		{name: "approval for another plan", object: map[string]any{"spec": delegated, "status": answered("ReviewRequired", cond("ReviewRequired", ReasonMismatch))},
			progressing: true, degraded: true},
		{name: "halted", object: map[string]any{"spec": delegated, "status": answered("InProgress", cond("InProgress", "Approved"), cond("Waiting", "RolloutHalted"))},
			progressing: true, degraded: true},
		{name: "waiting for a window is no failure", object: map[string]any{"spec": delegated, "status": answered("InProgress", cond("Waiting", "MaintenanceWindow"))},
			progressing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, progressingRule, tc.object); got != tc.progressing {
				t.Errorf("Progressing = %v, want %v", got, tc.progressing)
			}
			if got := eval(t, degradedRule, tc.object); got != tc.degraded {
				t.Errorf("Degraded = %v, want %v", got, tc.degraded)
			}
			if tc.message != "" {
				if got := eval(t, phaseMessage, tc.object); got != tc.message {
					t.Errorf("message = %q, want %q", got, tc.message)
				}
			}
		})
	}
}
