package virtplatformconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// PlanREST serves GET .../plan: the live plan, computed at request time
// and never stored.
type PlanREST struct {
	configs rest.Getter
	planner Planner
	gate    *Gate
	scheme  *runtime.Scheme
	// revert serves GET .../revert: the plan that restores what the
	// config's writes replaced (status.replaced), by the same engine.
	revert bool
}

var (
	_ rest.Getter         = &PlanREST{}
	_ rest.TableConvertor = &PlanREST{}
)

func (r *PlanREST) New() runtime.Object { return &advisor.Plan{} }
func (r *PlanREST) Destroy()            {}

// Get computes the plan of the named VirtPlatformConfig.
func (r *PlanREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.configs.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cfg := &v1alpha1.VirtPlatformConfig{}
	if err := r.scheme.Convert(obj, cfg, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	start := time.Now()
	// Concurrent GETs of the same revision share one computation.
	res, err := r.compute(ctx, cfg)
	metrics.PlanDuration.WithLabelValues(cfg.Spec.Profile).Observe(time.Since(start).Seconds())
	if apierrors.IsConflict(err) {
		return nil, err
	}
	if err != nil {
		return nil, planError(name, err)
	}
	out := &advisor.Plan{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Now()}}
	if err := r.scheme.Convert(&res.Status, &out.Status, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// kubectl prints warnings whatever the output format.
	for _, w := range res.Status.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	return out, nil
}

// compute is the plan this subresource serves: the profile's, or its
// revert (409 when nothing is recorded to revert).
func (r *PlanREST) compute(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	if !r.revert {
		return r.gate.sharedPlan(ctx, r.planner, cfg)
	}
	if len(cfg.Status.Replaced) == 0 {
		return nil, apierrors.NewConflict(configsResource, cfg.Name, errNothingToRevert)
	}
	return r.gate.sharedRevert(ctx, r.planner, cfg)
}

// busyRetrySeconds is the Retry-After of a request refused because every
// plan computation slot is taken: a plan takes tens of milliseconds, so a
// slot is free again long before.
const busyRetrySeconds = 1

// planError turns a failure to reach or read the main cluster into an
// error the caller can act on; it is never the caller's fault.
func planError(name string, err error) error {
	if IsBusy(err) {
		return apierrors.NewTooManyRequests(fmt.Sprintf("cannot compute the plan of %q now: %v; retry in %ds", name, err, busyRetrySeconds), busyRetrySeconds)
	}
	msg := fmt.Sprintf("cannot compute the plan of %q: %v; check that the main cluster is reachable and retry", name, err)
	if errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError(msg, 5)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == 500 {
		return err // our bug, already said so
	}
	if errors.As(err, &status) && status.Status().Code == 403 {
		return apierrors.NewForbidden(advisor.Resource("virtplatformconfigs/plan"), name,
			fmt.Errorf("virt-advisor-apiserver may not read a target object: %v; grant it the ClusterRole in artifacts/deploy/03-server-rbac.yaml", err))
	}
	return apierrors.NewServiceUnavailable(msg)
}

var planColumns = []metav1.TableColumnDefinition{
	{Name: "Item", Type: "string", Format: "name", Description: "Item name, or the missing prerequisite"},
	{Name: "Kind", Type: "string", Description: "Kind of the target object"},
	{Name: "Target", Type: "string", Description: "Target object, namespace/name"},
	{Name: "Operation", Type: "string", Description: "Create, Update, Delete or None; Missing for an unsatisfied prerequisite; Error when the item cannot be planned"},
	{Name: "Impact", Type: "string", Description: "Disruption the item may cause"},
	{Name: "Changes", Type: "string", Description: "Lines added and removed by the diff, or what to do"},
}

// ConvertToTable prints ITEM KIND TARGET OPERATION IMPACT CHANGES, and a
// last row with the spec settings that approving the plan approves too.
func (r *PlanREST) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	p, ok := obj.(*advisor.Plan)
	if !ok {
		return nil, fmt.Errorf("cannot print %T as a plan table", obj)
	}
	table := &metav1.Table{ColumnDefinitions: planColumns}
	for _, pre := range p.Status.Prerequisites {
		if pre.Satisfied {
			continue
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []interface{}{"prerequisite", pre.Kind, pre.APIVersion, "Missing", "-", pre.Description},
			Object: runtime.RawExtension{Object: p},
		})
	}
	for _, it := range p.Status.Items {
		target := it.TargetRef.Name
		if it.TargetRef.Namespace != "" {
			target = it.TargetRef.Namespace + "/" + target
		}
		op, changes := string(it.Operation), plan.ChangeSummary(it.Diff)
		if it.Error != "" {
			op, changes = "Error", it.Error
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []interface{}{it.Name, it.TargetRef.Kind, target, op, string(it.ImpactSeverity), changes},
			Object: runtime.RawExtension{Object: p},
		})
	}
	set := p.Status.Settings
	table.Rows = append(table.Rows, metav1.TableRow{
		Cells: []interface{}{"settings", "-", "-", "-", "-", "approving also approves " + v1alpha1.PlanSettings{Action: v1alpha1.PlanAction(set.Action), FailurePolicy: v1alpha1.FailurePolicy(set.FailurePolicy),
			BypassOptimisticLock: set.BypassOptimisticLock, WaitTimeout: set.WaitTimeout, AllowBlockingDrains: set.AllowBlockingDrains}.Summary() +
			fmt.Sprintf(" (generation %d)", p.Status.Generation)},
		Object: runtime.RawExtension{Object: p},
	})
	return table, nil
}
