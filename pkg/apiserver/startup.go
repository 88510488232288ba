package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// startStep is one step of the start sequence.
type startStep struct {
	name string
	run  func(context.Context) error
}

// startup runs the start sequence after the server is up: each step in
// order, retried until it succeeds, then the controller. A step that
// fails is reported by /readyz (this check), not by a crash, so the
// server keeps serving and says what it is waiting for.
type startup struct {
	mu   sync.Mutex
	done bool
	err  error
}

// Name is the readyz check's name: /readyz/virt-advisor-start.
func (s *startup) Name() string { return "virt-advisor-start" }

// Check fails until the start sequence is done.
func (s *startup) Check(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done:
		return nil
	case s.err != nil:
		return s.err
	default:
		return fmt.Errorf("starting")
	}
}

func (s *startup) set(done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done, s.err = done, err
}

func (s *startup) run(ctx context.Context, steps []startStep, then func(context.Context)) {
	logger := klog.FromContext(ctx)
	for _, step := range steps {
		backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			if err := step.run(ctx); err != nil {
				logger.Error(err, "Starting virt-advisor, will retry", "step", step.name)
				s.set(false, fmt.Errorf("%s: %w", step.name, err))
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return // ctx ended
		}
	}
	s.set(true, nil)
	logger.Info("virt-advisor started")
	then(ctx)
}
