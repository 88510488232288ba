//go:build !linux

package env

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can signal
// everything it spawned. Pdeathsig is Linux-only: elsewhere an interrupted
// test process may leave children behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
