package failpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int64 // name -> crashing hit
		sleeps  map[string]time.Duration
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ,", want: nil},
		{in: "after-write", want: map[string]int64{"after-write": 1}},
		{in: "after-write, before-status@3", want: map[string]int64{"after-write": 1, "before-status": 3}},
		{in: "a@1,b", want: map[string]int64{"a": 1, "b": 1}},
		{in: "a@0", wantErr: true},
		{in: "a@-2", wantErr: true},
		{in: "a@x", wantErr: true},
		{in: "a@", wantErr: true},
		{in: "@3", wantErr: true},
		{in: "a b", wantErr: true},
		{in: "a=1", wantErr: true},
		{in: "a,a@2", wantErr: true},
		{in: "before-write~3s", want: map[string]int64{"before-write": 0}, sleeps: map[string]time.Duration{"before-write": 3 * time.Second}},
		{in: "a@2~150ms,b", want: map[string]int64{"a": 2, "b": 1}, sleeps: map[string]time.Duration{"a": 150 * time.Millisecond}},
		{in: "a~", wantErr: true},
		{in: "a~0s", wantErr: true},
		{in: "a~-1s", wantErr: true},
		{in: "a~soon", wantErr: true},
		{in: "~1s", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parse(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parse(%q) succeeded, want an error", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("parse(%q) = %v, want nil (nothing armed)", tc.in, got)
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("parse(%q) armed %d points, want %d", tc.in, len(got), len(tc.want))
			}
			for name, at := range tc.want {
				if got[name] == nil || got[name].at != at {
					t.Errorf("parse(%q)[%s] = %+v, want at %d", tc.in, name, got[name], at)
				} else if got[name].sleep != tc.sleeps[name] {
					t.Errorf("parse(%q)[%s] sleeps %v, want %v", tc.in, name, got[name].sleep, tc.sleeps[name])
				}
			}
		})
	}
}

// The variable is read at start only: arming a running process does
// nothing (if it did, this test process would die).
func TestReadOnce(t *testing.T) {
	if os.Getenv(EnvVar) != "" {
		t.Fatalf("%s is set for the whole test run: unset it, the unit tests arm failpoints themselves", EnvVar)
	}
	t.Setenv(EnvVar, "late")
	Hit(context.Background(), "late")
}

// childEnv makes the test binary play the crashing process.
const childEnv = "FAILPOINT_TEST_CHILD"

// TestHitKills re-runs this test binary as a child with points armed and
// checks how it ends: killed by SIGKILL at the armed hit, with nothing run
// after it (no further lines, no deferred code), or not at all.
func TestHitKills(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		child()
		return
	}
	tests := []struct {
		armed      string
		wantKilled string // the point that kills, "" for none
		wantLines  int    // "after hit" lines the child printed
		wantSlept  int    // "failpoint crash: slept" lines logged
	}{
		{armed: "crash~20ms", wantLines: 4, wantSlept: 4},
		{armed: "crash@3~20ms", wantLines: 4, wantSlept: 1},
		{armed: "crash@2~20ms,other", wantKilled: "other", wantLines: 0},
		{armed: "crash", wantKilled: "crash", wantLines: 0},
		{armed: "crash@3", wantKilled: "crash", wantLines: 2},
		{armed: "other@2,crash@2", wantKilled: "crash", wantLines: 1}, // "other" is hit once only
		{armed: "other", wantKilled: "other", wantLines: 0},
		{armed: "crash@9", wantLines: 4},
		{armed: "", wantLines: 4},
	}
	for _, tc := range tests {
		t.Run(tc.armed, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHitKills$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"=1", EnvVar+"="+tc.armed)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()

			var exit *exec.ExitError
			killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() &&
				exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
			wantKilled := tc.wantKilled != ""
			if killed != wantKilled || !killed && err != nil {
				t.Fatalf("child ended with %v, want killed by SIGKILL: %v\nstdout:\n%s\nstderr:\n%s", err, wantKilled, stdout.String(), stderr.String())
			}
			if n := strings.Count(stdout.String(), "after hit"); n != tc.wantLines {
				t.Errorf("child printed %d lines after hits, want %d:\n%s", n, tc.wantLines, stdout.String())
			}
			if ran := strings.Contains(stdout.String(), "deferred"); ran == wantKilled {
				t.Errorf("deferred code ran: %v, want %v:\n%s", ran, !wantKilled, stdout.String())
			}
			if n := strings.Count(stderr.String(), "failpoint crash: slept 20ms"); n != tc.wantSlept {
				t.Errorf("child slept %d times at crash, want %d; stderr:\n%s", n, tc.wantSlept, stderr.String())
			}
			if logged := strings.Contains(stderr.String(), "failpoint "+tc.wantKilled+": killing the process"); logged != wantKilled {
				t.Errorf("kill of %q logged: %v, want %v; stderr:\n%s", tc.wantKilled, logged, wantKilled, stderr.String())
			}
		})
	}
}

// child hits "other" once and "crash" four times, saying so after each.
func child() {
	defer fmt.Println("deferred")
	Hit(context.Background(), "other")
	for i := 1; i <= 4; i++ {
		Hit(context.Background(), "crash")
		fmt.Printf("after hit %d\n", i)
	}
}

// A failpoint left in production code costs about a nanosecond.
func BenchmarkHitDisarmed(b *testing.B) {
	if armed != nil {
		b.Fatalf("%s is set: unset it to measure a disarmed failpoint", EnvVar)
	}
	for b.Loop() {
		Hit(context.Background(), "after-write")
	}
}

// A malformed value stops the process at start, before any test or server
// code runs, rather than arming nothing.
func TestMalformedStopsAtStart(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestParse$", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvVar+"=after-write@0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("child ended with %v, want exit code 2:\n%s", err, out)
	}
	if !strings.Contains(string(out), "invalid "+EnvVar) || strings.Contains(string(out), "PASS") {
		t.Errorf("want the error and no test run:\n%s", out)
	}
}
