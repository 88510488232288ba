package virtplatformconfig

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// blockingCompute counts computations and holds each until release is
// closed; started receives one value per computation.
type blockingCompute struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
}

func newBlockingCompute() *blockingCompute {
	return &blockingCompute{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blockingCompute) compute(ctx context.Context) (*plan.Result, error) {
	b.calls.Add(1)
	b.started <- struct{}{}
	select {
	case <-b.release:
		return &plan.Result{SnapshotHash: "h"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestGateSharesOneComputationAmongConcurrentRequests(t *testing.T) {
	g := NewGate(8, time.Second)
	b := newBlockingCompute()
	ctx := context.Background()

	const callers = 20
	results := make(chan *plan.Result, callers)
	go func() {
		r, _ := g.shared(ctx, "cfg/1/100", b.compute)
		results <- r
	}()
	<-b.started
	var entered sync.WaitGroup
	for i := 1; i < callers; i++ {
		entered.Add(1)
		go func() {
			entered.Done()
			r, _ := g.shared(ctx, "cfg/1/100", b.compute)
			results <- r
		}()
	}
	entered.Wait()
	time.Sleep(100 * time.Millisecond) // let them reach the running computation
	close(b.release)

	first := <-results
	for i := 1; i < callers; i++ {
		if r := <-results; r != first || r == nil {
			t.Fatalf("caller %d got %p, want the shared result %p", i, r, first)
		}
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("%d computations for %d concurrent requests of one revision, want 1", n, callers)
	}
}

func TestGateKeepsNoFinishedResult(t *testing.T) {
	g := NewGate(8, time.Second)
	var calls atomic.Int32
	compute := func(context.Context) (*plan.Result, error) {
		calls.Add(1)
		return &plan.Result{}, nil
	}
	for i := 0; i < 3; i++ {
		if _, err := g.shared(context.Background(), "cfg/1/100", compute); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d computations for 3 requests one after the other, want 3: a plan must stay live", n)
	}
}

func TestGateDoesNotShareAcrossRevisions(t *testing.T) {
	g := NewGate(8, time.Second)
	b := newBlockingCompute()
	done := make(chan error, 2)
	for _, key := range []string{"cfg/1/100", "cfg/1/101"} {
		go func() {
			_, err := g.shared(context.Background(), key, b.compute)
			done <- err
		}()
	}
	<-b.started
	<-b.started // both run at once: neither joined the other
	close(b.release)
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := b.calls.Load(); n != 2 {
		t.Errorf("%d computations for two revisions, want 2", n)
	}
}

func TestGateAnswersBusyWhenNoSlotFreesInTime(t *testing.T) {
	g := NewGate(1, 50*time.Millisecond)
	b := newBlockingCompute()
	held := make(chan error, 1)
	go func() {
		_, err := g.run(context.Background(), b.compute)
		held <- err
	}()
	<-b.started

	start := time.Now()
	_, err := g.shared(context.Background(), "other/1/1", b.compute)
	if !IsBusy(err) {
		t.Fatalf("got %v, want a BusyError while the only slot is taken", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || waited > 2*time.Second {
		t.Errorf("answered busy after %v, want after the 50ms wait", waited)
	}
	var busy *BusyError
	if errors.As(err, &busy) && busy.Limit != 1 {
		t.Errorf("BusyError.Limit = %d, want 1", busy.Limit)
	}

	close(b.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if _, err := g.shared(context.Background(), "other/1/1", b.compute); err != nil {
		t.Errorf("after the slot was freed: %v", err)
	}
}

func TestGateComputationOutlivesTheCallerThatStartedIt(t *testing.T) {
	g := NewGate(8, time.Second)
	b := newBlockingCompute()
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := g.shared(firstCtx, "cfg/1/100", b.compute)
		first <- err
	}()
	<-b.started
	second := make(chan *plan.Result, 1)
	go func() {
		r, _ := g.shared(context.Background(), "cfg/1/100", b.compute)
		second <- r
	}()
	time.Sleep(100 * time.Millisecond) // let the second caller join

	cancelFirst() // the first client goes away
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("first caller: got %v, want its own context's error", err)
	}
	close(b.release)
	if r := <-second; r == nil {
		t.Error("the second caller lost the shared computation when the first one left")
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("%d computations, want 1", n)
	}
}

func TestGateTurnsAPanicIntoAnError(t *testing.T) {
	g := NewGate(1, 50*time.Millisecond)
	_, err := g.shared(context.Background(), "cfg/1/100", func(context.Context) (*plan.Result, error) {
		panic("boom")
	})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v, want an internal error naming the panic", err)
	}
	// The slot was given back.
	if _, err := g.shared(context.Background(), "cfg/1/100", func(context.Context) (*plan.Result, error) { return &plan.Result{}, nil }); err != nil {
		t.Fatal(err)
	}
}

// livePlanner computes through a blockingCompute.
type livePlanner struct{ b *blockingCompute }

func (p livePlanner) ComputeLive(ctx context.Context, _ *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	return p.b.compute(ctx)
}

func (p livePlanner) ComputeRevertLive(ctx context.Context, _ *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	return p.b.compute(ctx)
}

// An approval is checked against a computation of its own: it never joins
// the computation of a review of the same revision that is running.
func TestApprovalNeverJoinsAReviewsComputation(t *testing.T) {
	g := NewGate(8, time.Second)
	b := newBlockingCompute()
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1, ResourceVersion: "7"}}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = g.sharedPlan(context.Background(), livePlanner{b}, cfg) })
	<-b.started
	wg.Go(func() { _, _ = g.boundedPlan(context.Background(), livePlanner{b}, cfg) })
	select {
	case <-b.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the approval waited for the review's computation instead of starting its own")
	}
	close(b.release)
	wg.Wait()
	if n := b.calls.Load(); n != 2 {
		t.Errorf("%d computations, want 2: one for the review, one for the approval", n)
	}
}
