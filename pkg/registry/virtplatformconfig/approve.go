package virtplatformconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// ApproveREST serves POST .../approve: it approves exactly the plan
// revision the caller reviewed, by hash, against the live plan.
type ApproveREST struct {
	// stored reads the config and writes its status.approval.
	stored    storedConfigs
	planner   Planner
	gate      *Gate
	recorder  record.EventRecorder
	authz     authorizer.Authorizer
	admission admission
}

var _ rest.NamedCreater = &ApproveREST{}

func (r *ApproveREST) New() runtime.Object { return &advisor.Approval{} }
func (r *ApproveREST) Destroy()            {}

var configsResource = advisor.Resource("virtplatformconfigs")

// Create records the approval of the plan named by spec.planHash when it
// is still the live plan, and hands it to the controller (phase InProgress).
// It reads the config and computes the live plan, lets admission decide,
// and writes only what admission admits, asking it again against the
// stored object inside the write.
func (r *ApproveREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	// Approving needs reading: before anything is computed, so that a
	// caller who may not review the plan learns nothing of it, not even
	// the live hash a 409 would name.
	if err := permission.Require(ctx, r.authz, readPlanPermission, "", name,
		"approving a plan takes reviewing it; ask for the virt-advisor-approver role, which grants both"); err != nil {
		return nil, err
	}
	req, err := approvalRequest(name, obj)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	user := requestUser(ctx)

	cfg, err := r.stored.get(ctx, name)
	if err != nil {
		return nil, err
	}
	revert, res, err := r.livePlan(ctx, cfg, req.Spec.PlanHash, user)
	if err != nil {
		return nil, err
	}

	now := metav1.Now()
	out := &advisor.Approval{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: now},
		Spec:       req.Spec,
		Status:     advisor.ApprovalStatus{ApprovedBy: user, ApprovedAt: &now, PlanHash: res.Status.PlanHash},
	}
	if isDryRun(options.DryRun) {
		return out, nil
	}
	rec := v1alpha1.ApprovalRecord{PlanHash: res.Status.PlanHash, ApprovedBy: user, ApprovedAt: now, Generation: cfg.Generation, UID: cfg.UID, Revert: revert}
	stored, before, after, err := r.record(ctx, cfg, res, rec)
	if err != nil {
		return nil, err
	}
	metrics.Approvals.Inc()
	r.announce(stored, rec, before, after)
	return out, nil
}

// livePlan is the live plan an approval of hash approves, computed for
// this approval: the revert plan (GET …/revert) when the config recorded
// writes to revert, the caller may review it, and it has that hash;
// otherwise the profile's plan. revert says which; an error says why the
// config or the plan cannot take the approval.
func (r *ApproveREST) livePlan(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, hash, user string) (revert bool, res *plan.Result, err error) {
	// revertErr: the revert plan could not be computed. An approval of
	// the profile's plan does not depend on it; one that matches neither
	// plan is told why the revert could not be checked. reverts: the live
	// revert plan, which a refusal names (the caller may review it).
	var reverts *plan.Result
	var revertErr error
	if len(cfg.Status.Replaced) > 0 {
		if mayReview, _ := permission.Allowed(ctx, r.authz, readRevertPermission, "", cfg.Name); mayReview {
			reverts, revertErr = r.gate.boundedOf(ctx, r.planner.ComputeRevertLive, cfg)
			if revertErr == nil && reverts.Status.PlanHash == hash {
				return true, reverts, r.admission.revertable(cfg, user)
			}
		}
	}
	// A config that cannot take an approval costs no plan computation.
	if err := r.admission.config(cfg, user); err != nil {
		return false, nil, notTheRevertEither(cfg.Name, hash, reverts, err)
	}
	if res, err = r.gate.boundedPlan(ctx, r.planner, cfg); err != nil {
		return false, nil, planError(cfg.Name, err)
	}
	if err := admitPlan(cfg.Name, res, hash); err != nil && revertErr != nil {
		return false, nil, planError(cfg.Name, revertErr)
	} else if err != nil {
		return false, nil, notTheRevertEither(cfg.Name, hash, reverts, err)
	}
	return false, res, nil
}

// notTheRevertEither is the 409 refusing hash as the profile's plan,
// naming the live revert plan too when there is one (nil: none, or the
// caller may not review it): a stale revert hash is told the live revert
// hash and to review the revert again, not to approve the profile's plan.
func notTheRevertEither(name, hash string, reverts *plan.Result, refusal error) error {
	var st *apierrors.StatusError
	if reverts == nil || !errors.As(refusal, &st) || !apierrors.IsConflict(refusal) {
		return refusal
	}
	why := strings.TrimPrefix(st.ErrStatus.Message, fmt.Sprintf("Operation cannot be fulfilled on %s %q: ", configsResource.String(), name))
	return apierrors.NewConflict(configsResource, name, fmt.Errorf(
		"plan %s is not the live revert plan, which is now %s: to revert, GET the revert plan again (kubectl advisor revert %s), review it, and approve its planHash. As the profile's plan: %s",
		hash, reverts.Status.PlanHash, name, why))
}

// approvalRequest checks the body of POST .../approve of config name.
func approvalRequest(name string, obj runtime.Object) (*advisor.Approval, error) {
	req, ok := obj.(*advisor.Approval)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an Approval, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the Approval must equal the VirtPlatformConfig name %q in the URL (or be left out)", req.Name, name))
	}
	if errs := validation.ValidateApproval(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(advisor.Kind("Approval"), name, errs)
	}
	return req, nil
}

// record writes the approval rec of the plan res, computed for cfg, into
// the stored config when admission still admits it there, and returns the
// stored config and its phases before and after the write.
func (r *ApproveREST) record(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, rec v1alpha1.ApprovalRecord) (stored runtime.Object, before, after v1alpha1.ConfigPhase, err error) {
	stored, err = r.stored.change(ctx, cfg.Name, func(latest *v1alpha1.VirtPlatformConfig) error {
		if err := r.admission.write(cfg, latest, rec.ApprovedBy, rec.Revert); err != nil {
			return err
		}
		before = latest.Status.Phase
		if err := approval.Record(&latest.Status, res, rec); err != nil {
			return err
		}
		after = latest.Status.Phase
		return nil
	})
	return stored, before, after, err
}

// announce emits the Approved event and, when the approval moved the
// config to another phase, the event of that phase.
func (r *ApproveREST) announce(stored runtime.Object, rec v1alpha1.ApprovalRecord, before, after v1alpha1.ConfigPhase) {
	if r.recorder == nil {
		return
	}
	ref, err := r.stored.versioned(stored)
	if err != nil {
		return
	}
	ref.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("VirtPlatformConfig"))
	r.recorder.Eventf(ref, "Normal", "Approved", "Plan %s approved by %s", rec.PlanHash, rec.ApprovedBy)
	if before != after {
		r.recorder.Event(ref, "Normal", string(after), status.PhaseMessage(&ref.Status))
	}
}

// admission decides whether an approval is admitted. Its methods are
// pure: Create reads and computes, asks them, and writes only what they
// admit.
type admission struct {
	// requireDistinctApprover refuses an approval by the author of the
	// spec (status.specChangedBy): --require-distinct-approver.
	requireDistinctApprover bool
}

// config says why cfg cannot take an approval by user now, if it cannot:
// a 409 for its action or phase, a 403 for four eyes.
func (a admission) config(cfg *v1alpha1.VirtPlatformConfig, user string) error {
	if err := approvable(cfg); err != nil {
		return apierrors.NewConflict(configsResource, cfg.Name, err)
	}
	if a.requireDistinctApprover && user == cfg.Status.SpecChangedBy {
		return apierrors.NewForbidden(configsResource, cfg.Name, fmt.Errorf(
			"user %q made the last spec change and this server requires a second person to approve (--require-distinct-approver): another user with the virt-advisor-approver role must approve the plan", user))
	}
	return nil
}

// write says why latest, the config as stored when the approval is
// written, cannot take user's approval of the plan computed for planned,
// if it cannot.
func (a admission) write(planned, latest *v1alpha1.VirtPlatformConfig, user string, revert bool) error {
	// The plan's hash binds the UID it was computed for; the stored
	// object must still be that one (deleted and created again under the
	// same name, with its generation brought back, it is not).
	if latest.UID != planned.UID {
		return apierrors.NewConflict(configsResource, planned.Name, fmt.Errorf("the VirtPlatformConfig was deleted and created again while the plan was being approved; GET the plan of the new object, review it, and approve it"))
	}
	if latest.Generation != planned.Generation {
		return apierrors.NewConflict(configsResource, planned.Name, fmt.Errorf("the spec changed while the plan was being approved; GET the plan again and approve it"))
	}
	if revert {
		return a.revertable(latest, user)
	}
	return a.config(latest, user)
}

// revertable says why cfg cannot take user's approval of its revert plan
// now, if it cannot: nothing is recorded to revert, or an approved plan
// is being written (409), unless a gate halted its rollout (a revert is
// one way out of a halt); four eyes (403). Any action may be reverted,
// Ignore included: it left in place what the revert restores.
func (a admission) revertable(cfg *v1alpha1.VirtPlatformConfig, user string) error {
	if len(cfg.Status.Replaced) == 0 {
		return apierrors.NewConflict(configsResource, cfg.Name, errNothingToRevert)
	}
	if cfg.Status.Phase == v1alpha1.PhaseInProgress && !status.Halted(&cfg.Status) {
		return apierrors.NewConflict(configsResource, cfg.Name, fmt.Errorf(
			"an approved plan is being written (phase InProgress): wait until it ends, then GET the revert plan again and approve it"))
	}
	if a.requireDistinctApprover && user == cfg.Status.SpecChangedBy {
		return apierrors.NewForbidden(configsResource, cfg.Name, fmt.Errorf(
			"user %q made the last spec change and this server requires a second person to approve (--require-distinct-approver): another user with the virt-advisor-approver role must approve the revert", user))
	}
	return nil
}

// errNothingToRevert: status.replaced records no write.
var errNothingToRevert = errors.New("there is nothing to revert: status.replaced records no write of virt-advisor for this config (it was never applied, or it was reverted already)")

// admitPlan says why the live plan of config name cannot be approved by
// the hash the caller reviewed, if it cannot.
func admitPlan(name string, live *plan.Result, reviewed string) error {
	if !live.Satisfied() {
		return apierrors.NewConflict(configsResource, name, fmt.Errorf("the plan cannot be approved: %s", live.MissingMessage()))
	}
	if live.Status.PlanHash != reviewed {
		return apierrors.NewConflict(configsResource, name, fmt.Errorf(
			"you approved plan %s but the live plan is now %s: the targets or the spec changed since you reviewed it. GET the plan again, review it, and approve its planHash",
			reviewed, live.Status.PlanHash))
	}
	return nil
}

// approvable says why a config cannot take an approval now, if it cannot.
func approvable(cfg *v1alpha1.VirtPlatformConfig) error {
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		return fmt.Errorf("spec.action is Ignore: nothing is applied while a config is ignored. Set spec.action to DryRun, review the plan, then approve it")
	}
	if why := status.WhyNotApprovable(&cfg.Status); why != "" {
		if status.WaitingFor(&cfg.Status) != nil {
			return errors.New(why) // it says what the plan waits for
		}
		return fmt.Errorf("%s: %s", why, status.PhaseMessage(&cfg.Status))
	}
	return nil
}

func isDryRun(dryRun []string) bool {
	return len(dryRun) > 0
}
