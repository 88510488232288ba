// Package failpoint crashes the process at named points of the code when a
// test asks for it, so that e2e tests can prove that a server killed there
// recovers after a restart (issue 17). Tests arm points through the
// environment of the server process:
//
//	VIRT_ADVISOR_FAILPOINTS=after-write,before-status@3
//
// kills the process at the first Hit("after-write") or at the third
// Hit("before-status"), whichever comes first. Hit is compiled into the
// production binary on purpose (the crash tests run the real server); with
// the variable unset it costs one nil check.
package failpoint

import (
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
// first hit) or "name@N" (crash on the Nth hit, N >= 1).
const EnvVar = "VIRT_ADVISOR_FAILPOINTS"

// point is one armed failpoint.
type point struct {
	at   int64 // the hit that crashes, 1 for the first
	hits atomic.Int64
}

// armed is read once, at start: a crash test arms a process when it starts
// it. nil in production.
var armed = mustParse(os.Getenv(EnvVar))

// Hit kills the process with SIGKILL if the point name is armed and this is
// the hit it waits for; otherwise it does nothing. Nothing after a killing
// Hit runs, deferred functions included, as in a real crash.
func Hit(name string) {
	if armed == nil {
		return
	}
	p := armed[name]
	if p == nil {
		return
	}
	if n := p.hits.Add(1); n != p.at {
		return
	}
	klog.Warningf("failpoint %s: killing the process (hit %d)", name, p.at)
	klog.Flush()
	kill()
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
		klog.Warningf("failpoints armed (%s=%s): this process kills itself when it reaches them", EnvVar, s)
	}
	return points
}

// parse reads "name,name@N,..."; it returns nil when no point is armed.
func parse(s string) (map[string]*point, error) {
	var points map[string]*point
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, count, hasCount := strings.Cut(entry, "@")
		if name == "" || strings.ContainsAny(name, " \t=") {
			return nil, fmt.Errorf("%q: want name or name@N", entry)
		}
		at := int64(1)
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
		points[name] = &point{at: at}
	}
	return points, nil
}
