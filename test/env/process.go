package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// stopGrace is how long a process may take to exit after SIGTERM.
	stopGrace = 10 * time.Second
	// logTailLines is how much of a log an error quotes.
	logTailLines = 30
)

// process is one child of the environment, logging to its own file.
type process struct {
	name    string
	bin     string
	dir     string
	args    []string
	env     []string // added to the environment of the test process
	cmd     *exec.Cmd
	logPath string
	logFrom int64 // offset where this run's output starts in logPath
	done    chan struct{}
	waitErr error // valid once done is closed
}

// startProcess runs bin with args in dir, appending stdout and stderr to
// logPath (appending keeps the output of earlier runs, e.g. before a restart).
// env (KEY=value) is added to the test process's own environment; a key set
// in both takes env's value.
func startProcess(name, bin, dir, logPath string, args, env []string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("creating log directory for %s: %w", name, err)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmdline := append(append(slices.Clone(env), bin), args...)
	fmt.Fprintf(f, "=== %s %s\n", time.Now().Format(time.RFC3339), strings.Join(cmdline, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir // anything a binary writes to a relative path lands in the env dir
	if len(env) > 0 {
		// exec dedups keys, the last one winning.
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, dir: dir, args: args, env: env,
		cmd: cmd, logPath: logPath, logFrom: off, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// rerun starts the same command line again (same args, environment and
// log), e.g. after stop, to restart a component in place. The old process
// must have exited.
func (p *process) rerun() (*process, error) {
	if !p.exited() {
		return nil, fmt.Errorf("restarting %s: it is still running", p.name)
	}
	return startProcess(p.name, p.bin, p.dir, p.logPath, p.args, p.env)
}

// exited reports whether the process has terminated.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an unexpected exit, quoting the end of the log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s",
		p.name, p.waitErr, p.logPath, p.tail(logTailLines))
}

// stop signals the whole process group and waits. After SIGTERM it waits up
// to stopGrace and then kills; an error reports a kill or a failed exit.
func (p *process) stop(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	if sig == syscall.SIGKILL {
		<-p.done
		return nil
	}
	select {
	case <-p.done:
		return p.failedExit(sig)
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %v and was killed", p.name, stopGrace, sig)
	}
}

// failedExit reports a non-zero exit after sig; the process has exited.
func (p *process) failedExit(sig syscall.Signal) error {
	var exitErr *exec.ExitError
	if errors.As(p.waitErr, &exitErr) && exitErr.ExitCode() > 0 {
		return fmt.Errorf("%s exited with code %d after %v; last lines of %s:\n%s",
			p.name, exitErr.ExitCode(), sig, p.logPath, p.tail(logTailLines))
	}
	return nil
}

// drain is stop(SIGTERM) for a server that lingers after its graceful
// part: once drained reports true (e.g. its log says the last request was
// answered) what is left is killed, without waiting out stopGrace.
func (p *process) drain(drained func() bool) error {
	if p.exited() {
		return nil
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(stopGrace)
	for {
		select {
		case <-p.done:
			return p.failedExit(syscall.SIGTERM)
		case <-t.C:
			if drained() {
				return p.stop(syscall.SIGKILL)
			}
		case <-deadline:
			_ = p.stop(syscall.SIGKILL)
			return fmt.Errorf("%s did not drain within %s of %v and was killed", p.name, stopGrace, syscall.SIGTERM)
		}
	}
}

// tail returns the last n lines this run wrote to the log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if p.logFrom <= int64(len(data)) {
		data = data[p.logFrom:]
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// logContains reports whether this run's log mentions s.
func (p *process) logContains(s string) bool {
	return strings.Contains(p.tail(1<<20), s)
}

// addrInUse reports whether an exited process failed to bind its port: the
// free-port probe races with other environments on the machine, so callers
// retry with new ports.
func (p *process) addrInUse() bool {
	return p.exited() && p.logContains("address already in use")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// They are picked at random below the kernel's ephemeral range: ports in
// that range are handed to outgoing connections (of which a control plane
// opens many) and to every bind(":0") probe, so a port chosen there can be
// taken before the process binds it, or while an advisor restarts on its
// fixed port. All listeners are held until every port is picked.
func freePorts(n int) ([]int, error) {
	lo, hi := 10000, ephemeralPortLow()-1
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi-lo >= 1000 && tries < 200 {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo+1))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, fmt.Errorf("finding a free port: %w", err)
			}
			continue // taken: try another
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralPortLow is the start of the kernel's ephemeral port range
// (Linux default 32768 when it cannot be read).
func ephemeralPortLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}

// poll calls check every interval until it reports done, the timeout
// expires, ctx ends, or p (if not nil) exits. On timeout the error includes
// check's last error so the caller sees why it never became ready.
func poll(parent context.Context, what string, interval, timeout time.Duration, p *process, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		if p != nil && p.exited() {
			return fmt.Errorf("waiting for %s: %w", what, p.exitError())
		}
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil { // not the deadline cutting a check short
			last = err
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, parent.Err())
			}
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("%s not reached within %s: %w", what, timeout, last)
		case <-t.C:
		}
	}
}
