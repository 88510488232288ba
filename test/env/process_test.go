package env

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if p >= ephemeralPortLow() {
			t.Errorf("port %d is in the ephemeral range (from %d)", p, ephemeralPortLow())
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestProcessLifecycle(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		script    string
		sig       syscall.Signal
		wantErr   string // substring of stop's error, "" for none
		wantExit  bool   // exits on its own; poll must report it with the log
		wantInLog string
	}{
		{name: "graceful", script: "trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done", sig: syscall.SIGTERM},
		{name: "killed", script: "echo up; while :; do sleep 0.05; done", sig: syscall.SIGKILL},
		{name: "failing shutdown", script: "trap 'echo bye; exit 3' TERM; while :; do sleep 0.05; done", sig: syscall.SIGTERM, wantErr: "exited with code 3"},
		{name: "early exit", script: "echo 'fatal: bad flag'; exit 1", wantExit: true, wantInLog: "fatal: bad flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := startProcess(tc.name, "/bin/sh", dir, filepath.Join(dir, "logs", strings.ReplaceAll(tc.name, " ", "-")+".log"), []string{"-c", tc.script}, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = poll(context.Background(), "never", 20*time.Millisecond, 300*time.Millisecond, p, func(context.Context) (bool, error) { return false, nil })
			if tc.wantExit {
				if err == nil || !strings.Contains(err.Error(), tc.wantInLog) {
					t.Fatalf("poll error = %v, want the exit with %q from the log", err, tc.wantInLog)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "not reached within") {
				t.Fatalf("poll error = %v, want a timeout", err)
			}
			err = p.stop(tc.sig)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("stop error = %v, want %q", err, tc.wantErr)
			}
			if !p.exited() {
				t.Error("process still running after stop")
			}
			if err := p.stop(tc.sig); err != nil {
				t.Errorf("second stop: %v", err)
			}
		})
	}
}

func TestHasFlag(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--etcd-servers=http://x"}, true},
		{[]string{"--v=4", "--etcd-servers", "http://x"}, true},
		{[]string{"--etcd-servers-overrides=x"}, false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := hasFlag(tc.args, "--etcd-servers"); got != tc.want {
			t.Errorf("hasFlag(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// A restart runs the same command line and environment and appends to the
// same log; each run's tail shows only its own output.
func TestProcessEnvAndRerun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PROCESS_TEST_INHERITED", "kept")
	log := filepath.Join(dir, "logs", "env.log")
	p, err := startProcess("env", "/bin/sh", dir, log,
		[]string{"-c", `echo "run fp=$FP inherited=$PROCESS_TEST_INHERITED"; while :; do sleep 0.05; done`},
		[]string{"FP=a", "PROCESS_TEST_INHERITED=overridden"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop(syscall.SIGKILL) })
	waitLog := func(p *process, s string) {
		t.Helper()
		err := poll(context.Background(), "log line", 20*time.Millisecond, 5*time.Second, p, func(context.Context) (bool, error) {
			return p.logContains(s), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitLog(p, "run fp=a inherited=overridden")
	if _, err := p.rerun(); err == nil {
		t.Fatal("rerun of a running process succeeded")
	}
	if err := p.stop(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	again, err := p.rerun()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.stop(syscall.SIGKILL) })
	waitLog(again, "run fp=a")
	if strings.Count(again.tail(100), "run fp=a") != 1 {
		t.Errorf("the second run's tail shows more than its own output:\n%s", again.tail(100))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "run fp=a"); n != 2 {
		t.Errorf("log has %d runs, want both:\n%s", n, data)
	}
	if !strings.Contains(string(data), "FP=a PROCESS_TEST_INHERITED=overridden /bin/sh") {
		t.Errorf("the log header does not show the added environment:\n%s", data)
	}
}

// drain kills a server that lingers once it says it is done, and reports a
// failed exit of one that ends by itself.
func TestProcessDrain(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		script  string
		wantErr string
	}{
		{name: "lingers", script: "trap 'echo drained; while :; do sleep 0.05; done' TERM; while :; do sleep 0.05; done"},
		{name: "exits", script: "trap 'exit 0' TERM; while :; do sleep 0.05; done"},
		{name: "fails", script: "trap 'exit 3' TERM; while :; do sleep 0.05; done", wantErr: "exited with code 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := startProcess(tc.name, "/bin/sh", dir, filepath.Join(dir, tc.name+".log"), []string{"-c", tc.script}, nil)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // let the shell set its trap
			start := time.Now()
			err = p.drain(func() bool { return p.logContains("drained") })
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("drain error = %v, want %q", err, tc.wantErr)
			}
			if !p.exited() {
				t.Error("still running after drain")
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("drain took %v: it waited instead of killing", took)
			}
		})
	}
}
