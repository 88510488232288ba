package env

import "syscall"

// sysProcAttr puts the child in its own process group (so Stop can signal
// everything it spawned) and has the kernel kill it if the test process
// dies, so no control plane outlives a crashed or interrupted run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
