package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Storage only the server reaches (DESIGN §4.3.1): whoever can write to
// the embedded etcd can write an approval whose hash matches.
var _ = Describe("storage only the server reaches", func() {
	BeforeEach(func() {
		if runtime.GOOS != "linux" {
			Skip("reads /proc and acts as another user: Linux only")
		}
	})

	It("embedded etcd: no TCP port of the server serves etcd; its unix socket is the server user's only", func() {
		adv := testEnv.Advisor()
		Expect(adv.EtcdDir).NotTo(BeEmpty(), "the main instance runs the embedded etcd")

		By("no TCP listener of the process but the API's own port, and none serves etcd without a client certificate")
		ports, err := listeningTCPPorts(adv.Pid())
		Expect(err).NotTo(HaveOccurred())
		Expect(ports).To(ContainElement(adv.Port), "the control: the API's port is found")
		for _, port := range ports {
			err := etcdStatus(fmt.Sprintf("http://127.0.0.1:%d", port))
			Expect(err).To(HaveOccurred(), "port %d serves etcd to a client without credentials", port)
		}
		Expect(ports).To(ConsistOf(adv.Port), "listening TCP ports of the server")

		By("the socket: mode 0600 in a 0700 directory, owned by the server's user")
		socket := filepath.Join(adv.EtcdDir, "etcd.sock")
		fi, err := os.Stat(socket)
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode() & os.ModeSocket).NotTo(BeZero())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		di, err := os.Stat(adv.EtcdDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(di.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		owner := fi.Sys().(*syscall.Stat_t).Uid
		Expect(int(owner)).To(Equal(processUID(adv.Pid())), "the socket belongs to the server's user")

		By("the server's user reaches etcd through it (the control); another user is refused")
		Expect(etcdStatus("unix://" + socket)).To(Succeed())
		if os.Geteuid() != 0 {
			Skip("acting as another local user needs root")
		}
		err = dialUnixAs(65534, socket)
		Expect(err).To(MatchError(syscall.EACCES), "user nobody connecting to %s", socket)
	})
})

// etcdStatus asks an etcd endpoint for its status without credentials.
func etcdStatus(endpoint string) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(suiteCtx, 3*time.Second)
	defer cancel()
	_, err = c.Status(ctx, endpoint)
	return err
}

// processUID is the real uid of a process.
func processUID(pid int) int {
	GinkgoHelper()
	fi, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	Expect(err).NotTo(HaveOccurred())
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}
