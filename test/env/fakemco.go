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
	stop, err := fakemco.Start(context.WithoutCancel(ctx), e.AdminConfig, o)
	if err != nil {
		_ = f.Close()
		return err
	}
	e.logf("fake MachineConfig operator running (log %s)", path)
	e.stopFakeMCO = func() {
		stop()
		_ = f.Close()
	}
	return nil
}
