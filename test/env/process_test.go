package env

import (
	"context"
	"net"
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
			p, err := startProcess(tc.name, "/bin/sh", dir, filepath.Join(dir, "logs", strings.ReplaceAll(tc.name, " ", "-")+".log"), []string{"-c", tc.script})
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
