package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// `make run` and `make reset` as a newcomer, a script or a service manager
// uses them: the control plane comes up, stops on a signal sent by PID
// without leaving a process behind, and `make reset` forgets its state but
// keeps the built tools. Each run is a second control plane next to the
// suite's, in a directory of its own (LOCAL_DIR).

// makeRun is a running `make run`.
type makeRun struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

func startMakeRun(dir string) *makeRun {
	GinkgoHelper()
	cmd := exec.Command("make", "run", "LOCAL_DIR="+dir)
	cmd.Dir = testEnv.RepoRoot
	// A group of its own, as a shell's job: a signal to the group is a
	// terminal's Ctrl-C, and the cleanup below reaches whatever is left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	Expect(cmd.Start()).To(Succeed())
	r := &makeRun{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	DeferCleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
		GinkgoWriter.Printf("make run said:\n%s\n", out.String())
	})
	Eventually(func() string {
		select {
		case <-r.exited:
			Fail("make run exited before the control plane was up:\n" + out.String())
		default:
		}
		return out.String()
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(ContainSubstring("virt-advisor is running."))
	return r
}

// descendants are the processes below pid, read from /proc.
func descendants(pid int) []int {
	GinkgoHelper()
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var all []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		all = append(all, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return all
}

func commOf(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// alive are those of pids that still exist and are not zombies.
func alive(pids []int) []string {
	var left []string
	for _, p := range pids {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i > 0 && strings.HasPrefix(s[i+1:], " Z") {
			continue
		}
		left = append(left, strconv.Itoa(p)+" "+commOf(p))
	}
	return left
}

var _ = Describe("make run and make reset", Ordered, startFirst, func() {
	var dir string
	BeforeAll(func() {
		if _, err := exec.LookPath("make"); err != nil {
			Fail("these specs run make: install GNU make")
		}
		dir = filepath.Join(GinkgoT().TempDir(), "local")
	})

	// stops sends sig to whom and checks that make exits within 30s,
	// local-up having stopped the control plane, and nothing is left.
	stops := func(name string, sig syscall.Signal, whom func(r *makeRun) int) {
		It("stops on "+sig.String()+" to "+name+" within 30s and leaves no process", func() {
			r := startMakeRun(dir)
			below := descendants(r.cmd.Process.Pid)
			var names []string
			for _, p := range below {
				names = append(names, commOf(p))
			}
			Expect(names).To(ContainElements("local-up", "etcd", "kube-apiserver", "virt-advisor-ap"), "what make run started")
			child := descendants(r.cmd.Process.Pid)[0]
			Expect(commOf(child)).To(Equal("local-up"), "exec: make's child is local-up itself, no shell between")

			start := time.Now()
			Expect(syscall.Kill(whom(r), sig)).To(Succeed())
			select {
			case <-r.exited:
			case <-time.After(30 * time.Second):
				Fail("make run did not exit within 30s of " + sig.String() + ":\n" + r.out.String())
			}
			GinkgoWriter.Printf("make run exited %s after %s\n", r.cmd.ProcessState, time.Since(start).Round(time.Millisecond))
			Expect(r.out.String()).To(ContainSubstring("stopped: etcd, kube-apiserver and virt-advisor have exited"))
			Expect(r.out.String()).NotTo(ContainSubstring("was killed"), "every process stopped on its signal")
			Eventually(func() []string { return alive(below) }).WithTimeout(5*time.Second).Should(BeEmpty(), "processes left behind")
		})
	}
	stops("make's process, as a service manager", syscall.SIGTERM, func(r *makeRun) int { return r.cmd.Process.Pid })
	stops("make's child, the recipe's process", syscall.SIGINT, func(r *makeRun) int { return descendants(r.cmd.Process.Pid)[0] })
	stops("the process group, as a terminal's Ctrl-C", syscall.SIGINT, func(r *makeRun) int { return -r.cmd.Process.Pid })

	It("make reset: refused while make run runs; then removes the control plane's state and keeps the tools", func() {
		tools := map[string]time.Time{}
		for _, t := range []string{"kube-apiserver", "kubectl", "etcd"} {
			fi, err := os.Stat(filepath.Join(testEnv.BinDir, t))
			Expect(err).NotTo(HaveOccurred())
			tools[t] = fi.ModTime()
		}
		r := startMakeRun(dir)
		reset := exec.Command("make", "reset", "LOCAL_DIR="+dir)
		reset.Dir = testEnv.RepoRoot
		out, err := reset.CombinedOutput()
		Expect(err).To(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("is in use by a running make run: stop it (Ctrl-C) first"))
		Expect(filepath.Join(dir, "logs")).To(BeADirectory())

		Expect(r.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(r.exited).WithTimeout(30 * time.Second).Should(BeClosed())
		reset = exec.Command("make", "reset", "LOCAL_DIR="+dir)
		reset.Dir = testEnv.RepoRoot
		out, err = reset.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("the next make run starts a fresh control plane; the tools in " + testEnv.BinDir + " are kept"))
		Expect(dir).NotTo(BeAnExistingFile())
		for t, mtime := range tools {
			fi, err := os.Stat(filepath.Join(testEnv.BinDir, t))
			Expect(err).NotTo(HaveOccurred(), "make reset keeps "+t)
			Expect(fi.ModTime()).To(Equal(mtime), t+" was not rebuilt")
		}
	})
})
