package virtplatformconfig

import (
	"context"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// AbortREST serves POST .../abort: it stops the approved plan of a config.
// The abort is one write of the stored config (phase Aborted, the abort
// record); every write of the controller is checked against the stored
// config right before it is made, so none starts after that write. A
// write already past its check when the abort lands may finish.
type AbortREST struct {
	// stored reads the config and writes its status.
	stored   storedConfigs
	recorder record.EventRecorder
	// pauser pauses the pools of the aborted plan before the abort is
	// answered; set once the controller exists (SetPauser).
	pauser atomic.Pointer[AbortPauser]
}

// AbortPauser pauses the MachineConfigPools an aborted plan was rolling
// out on (the controller's pool controller).
type AbortPauser interface {
	PauseAborted(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) error
}

// SetPauser gives the abort the controller's pauser.
func (r *AbortREST) SetPauser(p AbortPauser) { r.pauser.Store(&p) }

var _ rest.NamedCreater = &AbortREST{}

func (r *AbortREST) New() runtime.Object { return &advisor.Abort{} }
func (r *AbortREST) Destroy()            {}

// Create aborts the approved plan of config name, when one is being
// applied (phase InProgress), and answers what was written and what not.
// Anything else is a 409 saying what to do.
func (r *AbortREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, err := abortRequest(name, obj)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	user := requestUser(ctx)
	now := metav1.Now()
	var rec *v1alpha1.AbortRecord
	var stored runtime.Object
	if isDryRun(options.DryRun) {
		cfg, err := r.stored.get(ctx, name)
		if err != nil {
			return nil, err
		}
		if rec, err = abortConfig(cfg, req.Spec.PlanHash, user, now); err != nil {
			return nil, err
		}
	} else if stored, rec, err = r.record(ctx, name, req.Spec.PlanHash, user, now); err != nil {
		return nil, err
	}
	r.pauseAborted(ctx, stored)
	r.announce(stored)
	return &advisor.Abort{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: now},
		Spec:       req.Spec,
		Status: advisor.AbortStatus{AbortedBy: rec.AbortedBy, AbortedAt: &rec.AbortedAt, PlanHash: rec.PlanHash,
			Written: rec.Written, InFlight: rec.InFlight, NotWritten: rec.NotWritten},
	}, nil
}

// abortRequest checks the body of POST .../abort of config name.
func abortRequest(name string, obj runtime.Object) (*advisor.Abort, error) {
	req, ok := obj.(*advisor.Abort)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an Abort, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the Abort must equal the VirtPlatformConfig name %q in the URL (or be left out)", req.Name, name))
	}
	if errs := validation.ValidateAbort(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(advisor.Kind("Abort"), name, errs)
	}
	return req, nil
}

// record aborts the plan inside the write of the stored config: the
// decision is made on what is stored, not on an earlier read.
func (r *AbortREST) record(ctx context.Context, name, planHash, user string, now metav1.Time) (runtime.Object, *v1alpha1.AbortRecord, error) {
	var rec *v1alpha1.AbortRecord
	stored, err := r.stored.change(ctx, name, func(latest *v1alpha1.VirtPlatformConfig) error {
		var err error
		rec, err = abortConfig(latest, planHash, user, now)
		return err
	})
	return stored, rec, err
}

// abortConfig aborts the approved plan of cfg in place (approval.Abort);
// a config with no plan being applied is a 409 saying what to do.
func abortConfig(cfg *v1alpha1.VirtPlatformConfig, planHash, user string, now metav1.Time) (*v1alpha1.AbortRecord, error) {
	rec, err := approval.Abort(cfg, planHash, user, now)
	if err != nil {
		return nil, apierrors.NewConflict(configsResource, cfg.Name, err)
	}
	return rec, nil
}

// pauseAborted pauses the pools of the aborted plan stored now. Failing,
// the abort stands (nothing more is written) and the controller pauses
// them when it sees the abort; the caller is warned.
func (r *AbortREST) pauseAborted(ctx context.Context, stored runtime.Object) {
	p := r.pauser.Load()
	if p == nil || stored == nil {
		return
	}
	cfg, err := r.stored.versioned(stored)
	if err != nil {
		return
	}
	if err := (*p).PauseAborted(ctx, cfg); err != nil {
		klog.FromContext(ctx).Error(err, "Pausing the pools of an aborted plan failed; the controller pauses them when it sees the abort", "config", cfg.Name)
		warning.AddWarning(ctx, "", fmt.Sprintf("the plan is aborted (nothing more is written), but pausing its MachineConfigPools failed (%v): the controller retries; check with kubectl advisor status %s", err, cfg.Name))
	}
}

// announce emits the Aborted event.
func (r *AbortREST) announce(stored runtime.Object) {
	if r.recorder == nil || stored == nil {
		return
	}
	ref, err := r.stored.versioned(stored)
	if err != nil {
		return
	}
	ref.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("VirtPlatformConfig"))
	r.recorder.Event(ref, "Warning", string(v1alpha1.PhaseAborted), status.PhaseMessage(&ref.Status))
}
