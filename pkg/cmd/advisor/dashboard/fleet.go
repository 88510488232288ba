package dashboard

import (
	"context"
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
)

// fleetView is the page of a FleetConfig on a fleet's hub: its phase
// and, by wave, each cluster's own plan and progress.
type fleetView struct {
	Namespace, Name string
	Phase           v1alpha1.FleetPhase
	Message         string
	Approval        *v1alpha1.FleetApprovalRecord
	FleetHash       string
	Pending         []string
	Waves           []waveView
	// Err says why the FleetConfig cannot be shown, PlanErr why its plan
	// cannot.
	Err, PlanErr string
}

// waveView is one decision group of a fleet.
type waveView struct {
	Index    int32
	Name     string
	Clusters []fleetClusterView
}

// fleetClusterView is one cluster of a fleet.
type fleetClusterView struct {
	Name, Rollout, Message string
	Phase                  v1alpha1.ConfigPhase
	Plan                   *v1alpha1.PlanSummary
	Items                  string
	// Mismatch is the plan hash the fleet's approval approved when it is
	// not the live plan's: the cluster writes nothing.
	Mismatch string
}

// fleetRow is a FleetConfig as the configs page lists it.
type fleetRow struct {
	Namespace, Name, Profile, Message string
	Phase                             v1alpha1.FleetPhase
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	v, code := s.buildFleet(r.Context(), ns, name)
	s.render(w, code, "fleet", page{Title: "Fleet " + ns + "/" + name, Nav: "fleet", Refresh: s.refreshMillis(), Data: v})
}

func (s *Server) buildFleet(ctx context.Context, ns, name string) (fleetView, int) {
	v := fleetView{Namespace: ns, Name: name}
	fleets := s.c.Advisor.AdvisorV1alpha1().FleetConfigs(ns)
	fc, err := fleets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		v.Err = explain.Line(err)
		return v, codeOf(err)
	}
	v.Phase, v.Message, v.Approval = fc.Status.Phase, fc.Status.Message, fc.Status.Approval
	progress := map[string]v1alpha1.FleetClusterStatus{}
	for _, c := range fc.Status.Clusters {
		progress[c.Name] = c
	}
	p, err := fleets.GetPlan(ctx, name, metav1.GetOptions{})
	if err != nil {
		v.PlanErr = explain.Line(err)
		return v, http.StatusOK
	}
	v.FleetHash, v.Pending = p.Status.FleetHash, p.Status.Pending
	for _, c := range p.Status.Clusters {
		if len(v.Waves) == 0 || v.Waves[len(v.Waves)-1].Index != c.GroupIndex {
			v.Waves = append(v.Waves, waveView{Index: c.GroupIndex, Name: c.Group})
		}
		cv := fleetClusterView{Name: c.Name, Phase: v1alpha1.ConfigPhase(c.Phase), Message: c.Message, Plan: c.Plan, Rollout: progress[c.Name].Rollout}
		if c.Plan != nil {
			var items []string
			for _, it := range c.Plan.Items {
				items = append(items, string(it.Operation)+" "+it.Target)
			}
			cv.Items = strings.Join(items, ", ")
			if c.ApprovedPlanHash != "" && c.ApprovedPlanHash != c.Plan.PlanHash {
				cv.Mismatch = c.ApprovedPlanHash
			}
		}
		last := &v.Waves[len(v.Waves)-1]
		last.Clusters = append(last.Clusters, cv)
	}
	return v, http.StatusOK
}

// fleetsOf lists the FleetConfigs for the configs page: none, and no
// error, on a cluster that is no fleet's hub (the resource is not served)
// or for a user who may not list them in every namespace.
func (s *Server) fleetsOf(ctx context.Context) ([]fleetRow, string) {
	list, err := s.c.Advisor.AdvisorV1alpha1().FleetConfigs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		// No fleet's hub, or a user of none of its fleets across
		// namespaces: the page of a fleet still opens by its address.
		return nil, ""
	}
	if err != nil {
		return nil, explain.Line(err)
	}
	var out []fleetRow
	for _, fc := range list.Items {
		out = append(out, fleetRow{Namespace: fc.Namespace, Name: fc.Name, Profile: fc.Spec.Profile, Phase: fc.Status.Phase, Message: fc.Status.Message})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, ""
}

// fleetTone is the tone of a fleet's phase.
func fleetTone(p v1alpha1.FleetPhase) string {
	switch p {
	case v1alpha1.FleetPhaseCompleted:
		return "ok"
	case v1alpha1.FleetPhaseReviewRequired, v1alpha1.FleetPhaseRollingOut:
		return "info"
	case v1alpha1.FleetPhaseFailed, v1alpha1.FleetPhaseAborted:
		return "bad"
	}
	return "neutral"
}
