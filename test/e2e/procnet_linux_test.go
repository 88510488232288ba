package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// listeningTCPPorts are the ports a process listens on over TCP: the
// sockets of its file descriptors that /proc/net/tcp{,6} list as LISTEN.
func listeningTCPPorts(pid int) ([]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: TCP_LISTEN
				continue
			}
			_, port, _ := strings.Cut(fields[1], ":")
			p, err := strconv.ParseInt(port, 16, 32)
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("%s: %q: %w", table, fields[1], err)
			}
			ports = append(ports, int(p))
		}
		_ = f.Close()
	}
	return ports, nil
}

// dialUnixAs connects to a unix socket with the file-system identity of
// uid, as another local user would: setfsuid on a locked thread also drops
// root's override of file permissions, for that thread only, until it is
// set back. The thread must not end: the environment's processes get
// SIGKILL when the thread that started them exits (Pdeathsig).
func dialUnixAs(uid int, path string) error {
	runtime.LockOSThread()
	prev, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	restore := func() error {
		_, _, _ = syscall.RawSyscall(syscall.SYS_SETFSUID, prev, 0, 0)
		if cur := fsuid(); cur != int(prev) {
			return fmt.Errorf("cannot set the file-system uid back to %d (it is %d)", prev, cur)
		}
		runtime.UnlockOSThread()
		return nil
	}
	if cur := fsuid(); cur != uid {
		if err := restore(); err != nil {
			panic(err) // a thread with another identity must not run anything else
		}
		return fmt.Errorf("cannot act as uid %d (file-system uid is %d): run the suite as root", uid, cur)
	}
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err == nil {
		_ = conn.Close()
	}
	if rerr := restore(); rerr != nil {
		panic(rerr)
	}
	return err
}

// fsuid is the calling thread's file-system uid: an invalid id changes
// nothing and returns the current one.
func fsuid() int {
	cur, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(^uint32(0)), 0, 0)
	return int(cur)
}
