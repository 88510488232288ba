package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// confinementRetry looks again at an item waiting for the admission
// policies even without an event of their informers.
const confinementRetry = time.Minute

// confined is nil when the admission policies that confine the write of
// item it are in force, or when it writes nothing.
func (g *gate) confined(it *v1alpha1.VirtPlatformConfigItem) error {
	if g.confinement == nil || it.Operation == v1alpha1.OperationNone {
		return nil
	}
	return g.confinement.Writable(plan.TargetGVK(it.TargetRef))
}

// waitConfined keeps item it waiting, unwritten and its pools not paused,
// until the admission policies are in force: the config's Waiting
// condition (reason AdmissionPolicyNotInForce) names what is missing. An
// item whose write was started keeps its message, which says so.
func (g *gate) waitConfined(it *v1alpha1.VirtPlatformConfigItem, err error) (itemGate, time.Duration, *status.Wait, error) {
	msg := fmt.Sprintf("Item '%s' is not written: %v", it.Name, err)
	if it.State == v1alpha1.ItemStatePending {
		it.Message = "Not written: " + err.Error()
	}
	return gateWaiting, confinementRetry, &status.Wait{Reason: status.WaitingAdmissionPolicy, Message: msg}, nil
}

// confinedPauser pauses pools whatever the admission policies (a pause
// is the brake: it only holds back rollouts), but ends no pause until
// the policies that confine pool writes are in force: an unpause starts
// the rollout that reboots the nodes.
type confinedPauser struct {
	pauser      PoolPauser
	confinement Confinement
}

func (p confinedPauser) ApplyPool(ctx context.Context, pool *unstructured.Unstructured) error {
	if paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused"); !paused {
		if err := p.confinement.Writable(pool.GroupVersionKind()); err != nil {
			return err
		}
	}
	return p.pauser.ApplyPool(ctx, pool)
}
