package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// AbortHoldNote says which MachineConfigPools the abort recorded in cfg's
// status holds paused, and how to release them; "" when it holds none.
// It stands in every phase until an approval clears the abort: a spec
// change or action Ignore does not end the hold.
func AbortHoldNote(cfg *v1alpha1.VirtPlatformConfig) string {
	a := cfg.Status.Abort
	if a == nil || len(a.Held) == 0 {
		return ""
	}
	names := make([]string, 0, len(a.Held))
	for _, h := range a.Held {
		names = append(names, h.Kind+" "+h.Name)
	}
	release := "review the plan and approve it"
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		release = "set spec.action to DryRun (a config with action Ignore takes no approval), then review the plan and approve it"
	}
	return fmt.Sprintf("The MachineConfigPools that render %s stay paused by virt-advisor: plan %s was aborted by %s at %s. To release them, %s (an approver's approval ends the pause), or delete the config.",
		strings.Join(names, ", "), v1alpha1.ShortHash(a.PlanHash), a.AbortedBy, a.AbortedAt.UTC().Format(time.RFC3339), release)
}
