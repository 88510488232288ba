package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A figure that compares two states of the cluster (without and with the
// VMs, without and with their launchers) measures each once the control
// plane is quiet: after 10 000 creations kube-apiserver, etcd and the
// server still have watch events, garbage collection and compaction to
// finish, and plans timed in that wake would measure it, not the plan.
const (
	// settledShare: the control plane's processes together use less than
	// this share of one CPU over settleWindow.
	settledShare = 0.2
	settleWindow = time.Second
	settleBudget = time.Minute
	// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ).
	clockTicks = 100
)

// settle waits until the control plane has settled (or settleBudget has
// passed, which it reports) and says how long it waited.
func (b *bench) settle(what string) error {
	start := time.Now()
	share, settled, err := b.quiet(settleWindow, settleBudget)
	if err != nil {
		return err
	}
	if !settled {
		b.printf("%s: the control plane did not settle within %v (%.0f%% of a CPU); measuring anyway\n", what, settleBudget, share*100)
		return nil
	}
	b.printf("%s: the control plane settled after %v (%.0f%% of a CPU)\n", what, time.Since(start).Round(100*time.Millisecond), share*100)
	return nil
}

// quiet waits until the control plane's processes together used less
// than settledShare of one CPU over a window, for at most budget, and
// returns the share of the last window.
func (b *bench) quiet(window, budget time.Duration) (share float64, settled bool, err error) {
	start := time.Now()
	for {
		before, err := cpuTicks(b.e.Pids())
		if err != nil {
			return 0, false, err
		}
		time.Sleep(window)
		after, err := cpuTicks(b.e.Pids())
		if err != nil {
			return 0, false, err
		}
		share = float64(after-before) / clockTicks / window.Seconds()
		if share < settledShare {
			return share, true, nil
		}
		if time.Since(start) > budget {
			return share, false, nil
		}
	}
}

// cpuTicks is the CPU time (user and system, in clock ticks) the
// processes have used so far.
func cpuTicks(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return 0, err
		}
		n, err := statCPUTicks(string(raw))
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		total += n
	}
	return total, nil
}

// statCPUTicks is utime + stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces
// and parentheses: the fields are counted after its last ')'.
func statCPUTicks(stat string) (int64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var total int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// threadsCPU is the CPU time (ns) the threads of process pid now running
// have used so far: the sum of their /proc/<pid>/task/<tid>/schedstat,
// which the scheduler counts in nanoseconds where /proc/<pid>/stat counts
// in clock ticks (10 ms). A thread that exits takes its time with it; Go
// keeps its threads.
func threadsCPU(pid int) (int64, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if os.IsNotExist(err) {
			continue // exited since the listing
		}
		if err != nil {
			return 0, err
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", dir, t.Name())
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		total += n
	}
	return total, nil
}

// stolen is the machine's CPU time so far (/proc/stat's first line): all
// of it and what the hypervisor took (steal), in clock ticks.
type stolen struct{ total, steal int64 }

// shareSince is the share of the CPU time since before that was stolen.
func (s stolen) shareSince(before stolen) float64 {
	if s.total == before.total {
		return 0
	}
	return float64(s.steal-before.steal) / float64(s.total-before.total)
}

// readStolen reads the machine's CPU times.
func readStolen() (stolen, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return stolen{}, err
	}
	return parseStolen(string(raw))
}

// parseStolen parses /proc/stat's "cpu" line: user nice system idle
// iowait irq softirq steal guest guest_nice; guest time is counted in
// user already.
func parseStolen(stat string) (stolen, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return stolen{}, fmt.Errorf("/proc/stat: no cpu line with a steal column in %q", line)
	}
	var s stolen
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return stolen{}, fmt.Errorf("/proc/stat: column %d of %q: %w", i+1, line, err)
		}
		s.total += n
		if i == 7 {
			s.steal = n
		}
	}
	return s, nil
}
