package env

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir so two environments never share
// one etcd data dir (e.g. a second `make run`). The kernel drops the lock
// when the process dies, so a crash never leaves it stale.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another environment (stop it, e.g. Ctrl-C the other `make run`, or use another --dir)", dir)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return f, nil
}
