package virtplatformconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// ApproveREST serves POST .../approve: it approves exactly the plan
// revision the caller reviewed, by hash, against the live plan.
type ApproveREST struct {
	configs   *genericregistry.Store
	approvals *genericregistry.Store
	engine    *plan.Engine
	scheme    *runtime.Scheme
	recorder  record.EventRecorder
	authz     authorizer.Authorizer
	// requireDistinctApprover refuses an approval by status.specChangedBy.
	requireDistinctApprover bool
}

var _ rest.NamedCreater = &ApproveREST{}

func (r *ApproveREST) New() runtime.Object { return &advisor.Approval{} }
func (r *ApproveREST) Destroy()            {}

var configsResource = advisor.Resource("virtplatformconfigs")

// Create records the approval of the plan named by spec.planHash when it
// is still the live plan, and hands it to the controller (phase InProgress).
func (r *ApproveREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	// Approving needs reading: before anything is computed, so that a
	// caller who may not review the plan learns nothing of it, not even
	// the live hash a 409 would name.
	if err := requirePermission(ctx, r.authz, name, readPlanPermission,
		"approving a plan takes reviewing it", "ask for the virt-advisor-approver role, which grants both"); err != nil {
		return nil, err
	}
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
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	user := requestUser(ctx)

	current, err := r.configs.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cfg := &v1alpha1.VirtPlatformConfig{}
	if err := r.scheme.Convert(current, cfg, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := approvable(cfg); err != nil {
		return nil, apierrors.NewConflict(configsResource, name, err)
	}
	if err := r.distinctApprover(cfg, user); err != nil {
		return nil, err
	}
	// An approval is checked against a computation of its own.
	res, err := r.engine.ComputeBounded(ctx, cfg)
	if err != nil {
		return nil, planError(name, err)
	}
	if !res.Satisfied() {
		return nil, apierrors.NewConflict(configsResource, name, fmt.Errorf("the plan cannot be approved: %s", res.MissingMessage()))
	}
	if res.Status.PlanHash != req.Spec.PlanHash {
		return nil, apierrors.NewConflict(configsResource, name, fmt.Errorf(
			"you approved plan %s but the live plan is now %s: the targets or the spec changed since you reviewed it. GET the plan again, review it, and approve its planHash",
			req.Spec.PlanHash, res.Status.PlanHash))
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

	record := v1alpha1.ApprovalRecord{PlanHash: res.Status.PlanHash, ApprovedBy: user, ApprovedAt: now, Generation: cfg.Generation, UID: cfg.UID}
	var before, after v1alpha1.ConfigPhase
	update := rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		latest := &v1alpha1.VirtPlatformConfig{}
		if err := r.scheme.Convert(oldObj, latest, nil); err != nil {
			return nil, err
		}
		// The plan's hash binds the UID it was computed for; the stored
		// object must still be that one (deleted and created again under
		// the same name, with its generation brought back, it is not).
		if latest.UID != cfg.UID {
			return nil, apierrors.NewConflict(configsResource, name, fmt.Errorf("the VirtPlatformConfig was deleted and created again while the plan was being approved; GET the plan of the new object, review it, and approve it"))
		}
		if latest.Generation != cfg.Generation {
			return nil, apierrors.NewConflict(configsResource, name, fmt.Errorf("the spec changed while the plan was being approved; GET the plan again and approve it"))
		}
		if err := approvable(latest); err != nil {
			return nil, apierrors.NewConflict(configsResource, name, err)
		}
		if err := r.distinctApprover(latest, user); err != nil {
			return nil, err
		}
		before = latest.Status.Phase
		if err := approval.Record(&latest.Status, res, record); err != nil {
			return nil, err
		}
		after = latest.Status.Phase
		updated := &advisor.VirtPlatformConfig{}
		if err := r.scheme.Convert(latest, updated, nil); err != nil {
			return nil, err
		}
		return updated, nil
	})
	stored, _, err := r.approvals.Update(ctx, name, update, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	metrics.Approvals.Inc()
	if r.recorder != nil {
		ref := &v1alpha1.VirtPlatformConfig{}
		if err := r.scheme.Convert(stored, ref, nil); err == nil {
			ref.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("VirtPlatformConfig"))
			r.recorder.Eventf(ref, "Normal", "Approved", "Plan %s approved by %s", res.Status.PlanHash, user)
			if before != after {
				r.recorder.Event(ref, "Normal", string(after), status.PhaseMessage(&ref.Status))
			}
		}
	}
	return out, nil
}

// distinctApprover enforces --require-distinct-approver: the author of the
// spec cannot approve its plans.
func (r *ApproveREST) distinctApprover(cfg *v1alpha1.VirtPlatformConfig, user string) error {
	if !r.requireDistinctApprover || user != cfg.Status.SpecChangedBy {
		return nil
	}
	return apierrors.NewForbidden(configsResource, cfg.Name, fmt.Errorf(
		"user %q made the last spec change and this server requires a second person to approve (--require-distinct-approver): another user with the virt-advisor-approver role must approve the plan", user))
}

// approvable says why a config cannot take an approval now, if it cannot.
func approvable(cfg *v1alpha1.VirtPlatformConfig) error {
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		return fmt.Errorf("spec.action is Ignore: nothing is applied while a config is ignored. Set spec.action to DryRun, review the plan, then approve it")
	}
	if p, _ := status.Lookup(cfg.Status.Phase); !p.Approvable {
		return fmt.Errorf("%s: %s", p.NotApprovable, status.PhaseMessage(&cfg.Status))
	}
	return nil
}

func isDryRun(dryRun []string) bool {
	return len(dryRun) > 0
}
