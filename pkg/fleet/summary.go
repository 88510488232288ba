package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// SpecHash is the hash of spec as a cluster drafts its plan for it,
// spec.delegatedApproval left out (it approves; it changes no plan). The
// hub computes it of the spec it sends, defaulted as the cluster stores
// it, and counts a cluster's summary only when the hashes are equal: a
// summary of an older spec is never reviewed as this one's.
func SpecHash(spec v1alpha1.VirtPlatformConfigSpec) (string, error) {
	spec.DelegatedApproval = nil
	return hashJSON(spec)
}

func hashJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Summarize is the plan res in the few fields a fleet's review shows per
// cluster. Pools named by several items count once.
func Summarize(res *plan.Result, specHash string) *v1alpha1.PlanSummary {
	s := &v1alpha1.PlanSummary{PlanHash: res.Status.PlanHash, SpecHash: specHash}
	pools := map[string]v1alpha1.PoolReboot{}
	vms := map[string]v1alpha1.VMFate{}
	for i := range res.Status.Items {
		it := &res.Status.Items[i]
		s.Items = append(s.Items, v1alpha1.PlanSummaryItem{Name: it.Name, Operation: it.Operation,
			Target: it.TargetRef.Kind + "/" + it.TargetRef.Name})
		for _, r := range it.Reboots {
			if r.Disruption != v1alpha1.NodeDisruptionReboot && !r.Drains {
				continue
			}
			pools[r.Pool] = r
			for _, vm := range r.VMImpacts {
				if vm.Fate != v1alpha1.VMFateLiveMigrate {
					vms[vm.Namespace+"/"+vm.Name] = vm.Fate
				}
			}
		}
	}
	var capacity []string
	for _, name := range sortedKeys(pools) {
		r := pools[name]
		s.NodeReboots += r.Nodes
		s.LiveMigrations += r.LiveMigrations
		if r.Capacity != "" {
			capacity = append(capacity, fmt.Sprintf("pool %s: %s", name, r.Capacity))
		}
	}
	for _, fate := range vms {
		switch fate {
		case v1alpha1.VMFateShutDown:
			s.ShutDownVMs++
		case v1alpha1.VMFateBlocksDrain:
			s.DrainBlockingVMs++
		}
	}
	s.Capacity = strings.Join(capacity, "; ")
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
