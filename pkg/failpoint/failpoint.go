// Package failpoint crashes the process at named points of the code when a
// test asks for it, so that e2e tests can prove that a server killed there
// recovers after a restart (issue 17). Tests arm points through the
// environment of the server process:
//
//	VIRT_ADVISOR_FAILPOINTS=after-write,before-status@3
//
// kills the process at the first Hit(ctx, "after-write") or at the third
// Hit(ctx, "before-status"), whichever comes first. A point armed with a
// duration, "before-write~3s" (every hit) or "before-write@2~3s" (the
// second hit only), holds the goroutine that reaches it for that long
// instead, so that a test can change the cluster between a check and the
// write it guards. Hit is compiled into the
// production binary on purpose (the crash tests run the real server); with
// the variable unset it costs one nil check.
package failpoint

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// EnvVar lists the armed points, comma-separated, each "name" (crash on the
// first hit) or "name@N" (crash on the Nth hit, N >= 1), either followed by
// "~DURATION" to sleep there instead of crashing ("name~D" sleeps at every
// hit).
const EnvVar = "VIRT_ADVISOR_FAILPOINTS"

// point is one armed failpoint.
type point struct {
	at    int64         // the hit that crashes (or sleeps), 1 for the first; 0: every hit (sleep only)
	sleep time.Duration // 0: crash
	hits  atomic.Int64
}

// armed is read once, at start: a crash test arms a process when it starts
// it. nil in production.
var armed = mustParse(os.Getenv(EnvVar))

// Hit kills the process with SIGKILL if the point name is armed and this is
// the hit it waits for; otherwise it does nothing. Nothing after a killing
// Hit runs, deferred functions included, as in a real crash. A point armed
// with a duration sleeps for it instead. Either is said first with ctx's
// logger (the reconcile's, or the watch's).
func Hit(ctx context.Context, name string) {
	if armed == nil {
		return
	}
	p := armed[name]
	if p == nil {
		return
	}
	n := p.hits.Add(1)
	if p.at != 0 && n != p.at {
		return
	}
	if p.sleep > 0 {
		logger := klog.FromContext(ctx)
		// The e2e tests wait for these words in the server's log.
		logger.Info(fmt.Sprintf("failpoint %s: sleeping %v (hit %d)", name, p.sleep, n))
		time.Sleep(p.sleep)
		logger.Info(fmt.Sprintf("failpoint %s: slept %v (hit %d)", name, p.sleep, n))
		return
	}
	klog.FromContext(ctx).Info(fmt.Sprintf("failpoint %s: killing the process (hit %d)", name, p.at))
	klog.Flush()
	kill()
}

// Armed is true when the point name is armed: code that has to set
// something up for a point (a watch whose events it holds) does so only
// then.
func Armed(name string) bool {
	return armed[name] != nil
}

// kill sends SIGKILL to this process and waits for it to land: the signal
// is delivered asynchronously, and the caller must not go on meanwhile.
func kill() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	for {
		time.Sleep(time.Hour)
	}
}

// mustParse parses EnvVar. A malformed value stops the process at start: a
// crash test with a typo in a point name's syntax would otherwise pass
// without ever crashing anything.
func mustParse(s string) map[string]*point {
	points, err := parse(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "invalid %s=%q: %v\n", EnvVar, s, err)
		os.Exit(2)
	}
	if points != nil {
		klog.Warningf("failpoints armed (%s=%s): this process kills itself (or sleeps, for a point with a duration) when it reaches them", EnvVar, s)
	}
	return points
}

// parse reads "name,name@N,name~D,name@N~D,..."; it returns nil when no
// point is armed.
func parse(s string) (map[string]*point, error) {
	var points map[string]*point
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		spec, sleepFor, hasSleep := strings.Cut(entry, "~")
		name, count, hasCount := strings.Cut(spec, "@")
		if name == "" || strings.ContainsAny(name, " \t=") {
			return nil, fmt.Errorf("%q: want name, name@N, name~DURATION or name@N~DURATION", entry)
		}
		var sleep time.Duration
		if hasSleep {
			d, err := time.ParseDuration(sleepFor)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%q: DURATION must be a positive Go duration such as 3s", entry)
			}
			sleep = d
		}
		at := int64(1)
		if hasSleep && !hasCount {
			at = 0 // every hit sleeps
		}
		if hasCount {
			n, err := strconv.ParseInt(count, 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q: N must be a whole number >= 1", entry)
			}
			at = n
		}
		if points == nil {
			points = map[string]*point{}
		}
		if _, dup := points[name]; dup {
			return nil, fmt.Errorf("%q: point %s is listed twice", entry, name)
		}
		points[name] = &point{at: at, sleep: sleep}
	}
	return points, nil
}
