package env

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

const fakeMCOLogName = "fake-mco.log"

// runFakeMCO starts the fake MCO of the environment, logging to
// Dir/logs/fake-mco.log (and Options.FakeMCO.Log). It lives until Stop,
// like the processes: ctx only bounds the start.
func (e *Env) runFakeMCO(ctx context.Context) error {
	path := filepath.Join(e.Dir, "logs", fakeMCOLogName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the fake MCO log: %w", err)
	}
	o := e.opts.FakeMCO
	if o.Log != nil {
		o.Log = io.MultiWriter(f, o.Log)
	} else {
		o.Log = f
	}
	if err := ctx.Err(); err != nil {
		_ = f.Close()
		return err
	}
	op, err := fakemco.Start(context.WithoutCancel(ctx), e.AdminConfig, o)
	if err != nil {
		_ = f.Close()
		return err
	}
	e.logf("fake MachineConfig operator running (log %s)", path)
	e.fakeMCO = op
	e.stopFakeMCO = func() {
		op.Stop()
		_ = f.Close()
	}
	return nil
}

// FakeMCORollouts reports what the fake MCO did to a pool since the
// environment started (zero without the fake MCO).
func (e *Env) FakeMCORollouts(pool string) fakemco.Rollouts {
	if e.fakeMCO == nil {
		return fakemco.Rollouts{}
	}
	return e.fakeMCO.Rollouts(pool)
}
