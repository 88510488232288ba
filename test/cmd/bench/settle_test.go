package main

import (
	"os"
	"testing"
	"time"
)

func TestStatCPUTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       int64
		wantErr    bool
	}{
		{"plain", "1234 (etcd) S 1 1234 1234 0 -1 4194560 5063 0 0 0 700 42 0 0 20 0 12 0 100 0 0", 742, false},
		{"name with spaces and parentheses", "99 (a (b) c) R 1 99 99 0 -1 0 0 0 0 0 5 6 0 0", 11, false},
		{"no name", "99 R 1", 0, true},
		{"short", "99 (x) R 1 2 3", 0, true},
		{"not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s 0 0", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statCPUTicks(tc.stat)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("statCPUTicks(%q) = %d, %v; want %d, error %v", tc.stat, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestThreadsCPUCountsWhatThisProcessBurns(t *testing.T) {
	pid := os.Getpid()
	before, err := threadsCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x := 0
	for time.Since(start) < 50*time.Millisecond {
		x++
	}
	after, err := threadsCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The loop ran on one thread for 50 ms of wall time; allow for being
	// scheduled out on a busy machine.
	if got := time.Duration(after - before); got < 20*time.Millisecond {
		t.Errorf("threadsCPU grew by %v over a 50 ms busy loop (%d iterations), want at least 20ms", got, x)
	}
	if _, err := threadsCPU(1 << 30); err == nil {
		t.Error("threadsCPU of a process that does not exist: no error")
	}
}

func TestParseStolen(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       stolen
		wantErr    bool
	}{
		{name: "a virtual machine", stat: "cpu  2134135 7448 245032 6340172 7286 0 27646 168373 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
			want: stolen{total: 2134135 + 7448 + 245032 + 6340172 + 7286 + 27646 + 168373, steal: 168373}},
		{name: "no steal column", stat: "cpu  1 2 3 4 5 6 7\n", wantErr: true},
		{name: "not the cpu line", stat: "intr 1 2 3 4 5 6 7 8 9\n", wantErr: true},
		{name: "not a number", stat: "cpu  1 2 3 4 5 6 7 x 0 0\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStolen(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if share := (stolen{total: 300, steal: 30}).shareSince(stolen{total: 100, steal: 10}); share != 0.1 {
		t.Errorf("share = %v, want 0.1", share)
	}
}
