// Package failpoint lets the fault-injection tests crash the server at a
// named step: Hit is a no-op unless VIRT_ADVISOR_FAILPOINTS lists the name.
package failpoint

import (
	"os"
	"strings"
	"sync"
	"syscall"

	"k8s.io/klog/v2"
)

// EnvVar lists the failpoints to crash at, comma-separated.
const EnvVar = "VIRT_ADVISOR_FAILPOINTS"

var enabled = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, name := range strings.Split(os.Getenv(EnvVar), ",") {
		if name = strings.TrimSpace(name); name != "" {
			out[name] = true
		}
	}
	return out
})

// Hit kills the process, as a crash would (no deferred code runs), when
// the failpoint name is enabled.
func Hit(name string) {
	if !enabled()[name] {
		return
	}
	klog.InfoS("failpoint: killing the process", "failpoint", name)
	klog.Flush()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
