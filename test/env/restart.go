package env

import (
	"context"
	"fmt"
	"time"
)

// Restarting the main cluster's components in place: the same binary,
// flags, ports and data directory, so every client (the advisor, the fake
// MCO, tests) reconnects to the address it already has, as clients of a
// real control plane do when it is upgraded. Stop* shut a component down
// gracefully (SIGTERM), Start* bring it back and wait until it is ready as
// the first start does, Restart* do both with a pause in between. Env.Stop
// stops whatever runs at the time.

// StopKubeAPIServer stops the main cluster's kube-apiserver as in a rolling
// upgrade: SIGTERM, it stops listening (new connections are refused) and
// answers the requests in flight; its open watches are then cut (see
// stopKubeAPIServer). Stopping it twice is a no-op.
func (e *Env) StopKubeAPIServer() error {
	return stopKubeAPIServer(e.current(&e.apiserver))
}

// StartKubeAPIServer starts the stopped kube-apiserver again on its port
// and waits until /readyz passes (which needs etcd).
func (e *Env) StartKubeAPIServer(ctx context.Context) error {
	p, err := e.rerun(&e.apiserver)
	if err != nil {
		return err
	}
	if err := waitKubeAPIServerReady(ctx, p, e.AdminConfig); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	return nil
}

// RestartKubeAPIServer stops kube-apiserver, keeps it down for down, and
// starts it again; it returns once it is ready.
func (e *Env) RestartKubeAPIServer(ctx context.Context, down time.Duration) error {
	if err := e.StopKubeAPIServer(); err != nil {
		return err
	}
	if err := sleep(ctx, down); err != nil {
		return err
	}
	return e.StartKubeAPIServer(ctx)
}

// StopEtcd stops the main cluster's etcd: SIGTERM, then SIGKILL a second
// later (see stopEtcd). Stopping it twice is a no-op. Advisors on their
// embedded etcd keep their own storage; those on the shared etcd
// (Options.AdvisorSharedEtcd) lose theirs for the outage.
func (e *Env) StopEtcd() error {
	return stopEtcd(e.current(&e.etcd))
}

// StartEtcd starts the stopped etcd again on its ports and data and waits
// until it reports healthy. kube-apiserver, if running, reconnects by
// itself; StartEtcd does not wait for that.
func (e *Env) StartEtcd(ctx context.Context) error {
	p, err := e.rerun(&e.etcd)
	if err != nil {
		return err
	}
	err = poll(ctx, "etcd healthy", 100*time.Millisecond, etcdReadyTimeout, p, func(ctx context.Context) (bool, error) {
		return etcdHealthy(ctx, e.EtcdURL)
	})
	if err != nil {
		return fmt.Errorf("restarting etcd: %w", err)
	}
	return nil
}

// RestartEtcd stops etcd, keeps it down for down, and starts it again; it
// returns once etcd is healthy.
func (e *Env) RestartEtcd(ctx context.Context, down time.Duration) error {
	if err := e.StopEtcd(); err != nil {
		return err
	}
	if err := sleep(ctx, down); err != nil {
		return err
	}
	return e.StartEtcd(ctx)
}

// current returns the component's latest process.
func (e *Env) current(slot **process) *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return *slot
}

// rerun starts the component's command line again and records the new
// process, so that Env.Stop stops it. It refuses while the component runs
// and after Env.Stop (a process started then would outlive the
// environment).
func (e *Env) rerun(slot **process) (*process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if *slot == nil {
		return nil, fmt.Errorf("restarting a component: the environment did not start")
	}
	if e.stopped {
		return nil, fmt.Errorf("restarting %s: the environment is stopped", (*slot).name)
	}
	p, err := (*slot).rerun()
	if err != nil {
		return nil, err
	}
	*slot = p
	return p, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
