package virtplatformconfig

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"runtime/debug"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Gate, the 429 of the plan and approve subresources, bounds the plan
// computations that API requests start, so a burst
// of requests cannot turn into an unbounded burst of GETs and dry-runs
// against the main API server, and lets concurrent requests for the same
// config revision share one computation.
//
// A result is shared only with requests that arrive while its computation
// runs; nothing is kept once it ends, so a request arriving later starts a
// new computation and the plan stays live. Since at most one computation
// per revision runs at a time, the one a request joins started after every
// earlier computation of that revision ended: a client never gets a plan
// read before one it has already seen.
type Gate struct {
	slots   *semaphore.Weighted
	size    int
	maxWait time.Duration
	flights singleflight.Group
}

// NewGate returns a gate that runs at most size computations at once; a
// computation that cannot start within maxWait fails with a *BusyError.
func NewGate(size int, maxWait time.Duration) *Gate {
	return &Gate{slots: semaphore.NewWeighted(int64(size)), size: size, maxWait: maxWait}
}

// BusyError says that every computation slot stayed taken for as long as a
// request may wait.
type BusyError struct {
	Limit  int
	Waited time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%d plans are being computed, the most this server computes at once (--max-concurrent-plans), and none finished within %v", e.Limit, e.Waited)
}

// IsBusy reports whether err is, or wraps, a *BusyError.
func IsBusy(err error) bool {
	var busy *BusyError
	return errors.As(err, &busy)
}

// run computes under a slot, waiting for one for at most maxWait (or until
// ctx ends, which also counts as busy: the caller gave up waiting).
func (g *Gate) run(ctx context.Context, compute func(context.Context) (*plan.Result, error)) (*plan.Result, error) {
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, g.maxWait)
	err := g.slots.Acquire(waitCtx, 1)
	cancel()
	if err != nil {
		return nil, &BusyError{Limit: g.size, Waited: time.Since(start).Round(time.Millisecond)}
	}
	defer g.slots.Release(1)
	return compute(ctx)
}

// shared runs compute under key, joining a computation of the same key
// that is already running. The computation does not depend on the caller
// that started it staying: it runs until the deadline of that caller's
// request, and each caller stops waiting when its own context ends.
func (g *Gate) shared(ctx context.Context, key string, compute func(context.Context) (*plan.Result, error)) (*plan.Result, error) {
	results := g.flights.DoChan(key, func() (_ interface{}, err error) {
		// The computation runs outside the request's goroutine, where the
		// server's panic recovery does not reach: a panic must fail the
		// requests that wait for it, not the process.
		defer func() {
			if r := recover(); r != nil {
				utilruntime.HandleError(fmt.Errorf("computing plan %s panicked: %v\n%s", key, r, debug.Stack()))
				err = apierrors.NewInternalError(fmt.Errorf("computing the plan failed unexpectedly: %v", r))
			}
		}()
		flightCtx := context.WithoutCancel(ctx)
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			flightCtx, cancel = context.WithDeadline(flightCtx, deadline)
			defer cancel()
		}
		return g.run(flightCtx, compute)
	})
	select {
	case r := <-results:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*plan.Result), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the plan: %w", ctx.Err())
	}
}

// revisionKey names what a plan is computed from on our side: the config
// and the exact revision the request read.
func revisionKey(cfg *v1alpha1.VirtPlatformConfig) string {
	return fmt.Sprintf("%s/%d/%s", cfg.Name, cfg.Generation, cfg.ResourceVersion)
}

// shared is a live plan for a request that reviews it (GET …/plan):
// bounded by the gate and shared with concurrent requests for the same
// config revision. The result may be shared: do not modify it.
func (g *Gate) sharedPlan(ctx context.Context, planner Planner, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	return g.sharedOf(ctx, revisionKey(cfg), planner.ComputeLive, cfg)
}

// sharedRevert is sharedPlan for the revert plan (GET …/revert).
func (g *Gate) sharedRevert(ctx context.Context, planner Planner, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	return g.sharedOf(ctx, "revert/"+revisionKey(cfg), planner.ComputeRevertLive, cfg)
}

// computeFunc computes a plan of a config.
type computeFunc func(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)

func (g *Gate) sharedOf(ctx context.Context, key string, compute computeFunc, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	if g == nil {
		return compute(ctx, cfg)
	}
	return g.shared(ctx, key, func(ctx context.Context) (*plan.Result, error) {
		return compute(ctx, cfg)
	})
}

// boundedPlan is a live plan for a request that must see its own
// computation (an approval): bounded by the gate, never shared.
func (g *Gate) boundedPlan(ctx context.Context, planner Planner, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	return g.boundedOf(ctx, planner.ComputeLive, cfg)
}

func (g *Gate) boundedOf(ctx context.Context, compute computeFunc, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	if g == nil {
		return compute(ctx, cfg)
	}
	return g.run(ctx, func(ctx context.Context) (*plan.Result, error) {
		return compute(ctx, cfg)
	})
}
