package fleetconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
)

// PlanREST serves GET .../fleetconfigs/NAME/plan: the live fleet plan,
// each cluster's plan as the cluster drafted it.
type PlanREST struct {
	stored  *Stored
	planner Planner
}

var _ rest.Getter = &PlanREST{}

func (r *PlanREST) New() runtime.Object { return &advisor.FleetPlan{} }
func (r *PlanREST) Destroy()            {}

func (r *PlanREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	fc, err := r.stored.Get(ctx, request.NamespaceValue(ctx), name)
	if err != nil {
		return nil, err
	}
	live, err := r.live(ctx, fc)
	if err != nil {
		return nil, err
	}
	out := &advisor.FleetPlan{}
	versioned := &v1alpha1.FleetPlan{ObjectMeta: metav1.ObjectMeta{Name: fc.Name, Namespace: fc.Namespace, CreationTimestamp: metav1.Now()}, Status: live}
	if err := r.stored.scheme.Convert(versioned, out, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// live is the live fleet plan of fc; a hub that cannot be read is a 503
// saying what failed.
func (r *PlanREST) live(ctx context.Context, fc *v1alpha1.FleetConfig) (v1alpha1.FleetPlanStatus, error) {
	live, err := r.planner.Plan(ctx, fc)
	if err != nil {
		return live, apierrors.NewServiceUnavailable(fmt.Sprintf("the fleet plan of %s/%s cannot be read from the hub: %v (is Open Cluster Management's hub installed here?)", fc.Namespace, fc.Name, err))
	}
	return live, nil
}

// ApproveREST serves POST .../fleetconfigs/NAME/approve: it approves
// exactly the fleet plan the caller reviewed, by fleet hash, against the
// live fleet plan. The hub's controller then delivers the approval to
// every cluster, wave by wave (docs/fleet.md).
type ApproveREST struct {
	stored  *Stored
	planner Planner
	authz   authorizer.Authorizer
	clock   clock.PassiveClock
}

var _ rest.NamedCreater = &ApproveREST{}

func (r *ApproveREST) New() runtime.Object { return &advisor.Approval{} }
func (r *ApproveREST) Destroy()            {}

func (r *ApproveREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ns := request.NamespaceValue(ctx)
	// Approving takes reviewing: a caller who may not read the fleet
	// plan learns nothing of it, not even the live hash a 409 names.
	if err := permission.Require(ctx, r.authz, readFleetPlanPermission, ns, name, "approving a fleet plan takes reviewing it; ask for the virt-advisor-fleet-approver role, which grants both"); err != nil {
		return nil, err
	}
	req, err := fleetApprovalRequest(name, obj)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	fc, err := r.stored.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if err := approvable(fc); err != nil {
		return nil, apierrors.NewConflict(resource, name, err)
	}
	live, err := (&PlanREST{planner: r.planner}).live(ctx, fc)
	if err != nil {
		return nil, err
	}
	if err := admitFleetPlan(&live, req.Spec.PlanHash); err != nil {
		return nil, apierrors.NewConflict(resource, name, err)
	}
	user, now := requestUser(ctx), metav1.NewTime(r.clock.Now())
	out := &advisor.Approval{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: now}, Spec: req.Spec,
		Status: advisor.ApprovalStatus{ApprovedBy: user, ApprovedAt: &now, PlanHash: live.FleetHash}}
	if len(options.DryRun) > 0 {
		return out, nil
	}
	_, err = r.stored.Change(ctx, ns, name, func(latest *v1alpha1.FleetConfig) error {
		if latest.UID != fc.UID || latest.Generation != fc.Generation {
			return apierrors.NewConflict(resource, name, errors.New("the FleetConfig changed while its plan was being approved; GET the fleet plan again and approve it"))
		}
		if err := approvable(latest); err != nil {
			return apierrors.NewConflict(resource, name, err)
		}
		latest.Status.Approval = &v1alpha1.FleetApprovalRecord{FleetHash: live.FleetHash, ApprovedBy: user, ApprovedAt: now,
			Generation: latest.Generation, Clusters: fleet.Approved(&live)}
		latest.Status.Abort = nil
		latest.Status.Phase = v1alpha1.FleetPhaseRollingOut
		latest.Status.Message = fmt.Sprintf("Fleet plan %s approved by %s: rolling out to %d clusters", v1alpha1.ShortHash(live.FleetHash), user, len(live.Clusters))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fleetApprovalRequest checks the body of POST .../approve of FleetConfig name.
func fleetApprovalRequest(name string, obj runtime.Object) (*advisor.Approval, error) {
	req, ok := obj.(*advisor.Approval)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an Approval, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the Approval must equal the FleetConfig name %q in the URL (or be left out)", req.Name, name))
	}
	if errs := validation.ValidateApproval(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(advisor.Kind("Approval"), name, errs)
	}
	return req, nil
}

// approvable says why fc cannot take an approval now, if it cannot: an
// approved fleet plan of this spec is rolling out (abort it first; a new
// approval would replace the one each cluster is writing by).
func approvable(fc *v1alpha1.FleetConfig) error {
	st := &fc.Status
	if st.Approval != nil && st.Approval.Generation == fc.Generation && st.Abort == nil && st.Phase == v1alpha1.FleetPhaseRollingOut {
		return fmt.Errorf("fleet plan %s approved by %s is rolling out: abort it first (POST .../fleetconfigs/%s/abort), then GET the fleet plan again and approve it",
			v1alpha1.ShortHash(st.Approval.FleetHash), st.Approval.ApprovedBy, fc.Name)
	}
	return nil
}

// admitFleetPlan says why the live fleet plan cannot be approved by the
// hash the caller reviewed, if it cannot.
func admitFleetPlan(live *v1alpha1.FleetPlanStatus, reviewed string) error {
	if len(live.Pending) > 0 {
		return fmt.Errorf("the fleet plan cannot be approved until every cluster has reported its plan for this spec: %s", strings.Join(live.Pending, "; "))
	}
	if live.FleetHash != reviewed {
		return fmt.Errorf("you approved fleet plan %s but the live fleet plan is now %s: a cluster's plan, the clusters, their waves or the spec changed since you reviewed it. GET the fleet plan again, review it, and approve its fleetHash",
			reviewed, live.FleetHash)
	}
	return nil
}

// AbortREST serves POST .../fleetconfigs/NAME/abort: no cluster starts
// the approved fleet plan any more, and every cluster that started it
// aborts it as POST .../virtplatformconfigs/NAME/abort does.
type AbortREST struct {
	stored *Stored
	clock  clock.PassiveClock
}

var _ rest.NamedCreater = &AbortREST{}

func (r *AbortREST) New() runtime.Object { return &advisor.Abort{} }
func (r *AbortREST) Destroy()            {}

func (r *AbortREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ns := request.NamespaceValue(ctx)
	req, ok := obj.(*advisor.Abort)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an Abort, got %T", obj))
	}
	if errs := validation.ValidateAbort(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(advisor.Kind("Abort"), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	user, now := requestUser(ctx), metav1.NewTime(r.clock.Now())
	var hash string
	change := func(latest *v1alpha1.FleetConfig) error {
		st := &latest.Status
		switch {
		case st.Approval == nil || st.Approval.Generation != latest.Generation:
			return apierrors.NewConflict(resource, name, errors.New("no approved fleet plan of this spec is rolling out: there is nothing to abort"))
		case st.Abort != nil:
			return apierrors.NewConflict(resource, name, fmt.Errorf("fleet plan %s was already aborted by %s", v1alpha1.ShortHash(st.Approval.FleetHash), st.Abort.AbortedBy))
		case req.Spec.PlanHash != "" && req.Spec.PlanHash != st.Approval.FleetHash:
			return apierrors.NewConflict(resource, name, fmt.Errorf("you asked to abort fleet plan %s but the approved fleet plan is %s", v1alpha1.ShortHash(req.Spec.PlanHash), v1alpha1.ShortHash(st.Approval.FleetHash)))
		}
		hash = st.Approval.FleetHash
		st.Abort = &v1alpha1.FleetAbortRecord{AbortedBy: user, AbortedAt: now}
		st.Phase = v1alpha1.FleetPhaseAborted
		st.Message = fmt.Sprintf("Fleet plan %s approved by %s was aborted by %s: no cluster starts it; the clusters that started it abort it", v1alpha1.ShortHash(hash), st.Approval.ApprovedBy, user)
		return nil
	}
	if len(options.DryRun) > 0 {
		fc, err := r.stored.Get(ctx, ns, name)
		if err == nil {
			err = change(fc)
		}
		if err != nil {
			return nil, err
		}
	} else if _, err := r.stored.Change(ctx, ns, name, change); err != nil {
		return nil, err
	}
	return &advisor.Abort{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: now}, Spec: req.Spec,
		Status: advisor.AbortStatus{AbortedBy: user, AbortedAt: &now, PlanHash: hash}}, nil
}
