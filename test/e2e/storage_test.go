package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/sharedstorage"
	"github.com/kubevirt/virt-advisor/test/env"
)

// Storage only the server reaches (docs/design.md, the governance
// invariant): whoever can write to the embedded etcd can write an approval
// whose hash matches.
var _ = Describe("storage only the server reaches", func() {
	BeforeEach(func() {
		// The suite runs where the server runs: Linux (CI and make test).
		Expect(runtime.GOOS).To(Equal("linux"), "these specs read /proc and act as another user")
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
		Expect(os.Geteuid()).To(BeZero(), "acting as another local user needs root, as CI and make test run")
		err = dialUnixAs(65534, socket)
		Expect(err).To(MatchError(syscall.EACCES), "user nobody connecting to %s", socket)
	})

	It("a second replica on a store of its own reports not ready (embedded etcd allows one replica); the first stays ready and leads", func() {
		main := testEnv.Advisor()
		mainStore := etcdClusterID("unix://" + filepath.Join(main.EtcdDir, "etcd.sock"))
		leaseOf := func(g Gomega) (holder, store string) {
			l, err := kube.CoordinationV1().Leases(leaseNamespace).Get(suiteCtx, leaseName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return holder, l.Labels[sharedstorage.LeaseLabel]
		}
		// A Lease released by an instance an earlier spec stopped keeps its
		// label and has no holder until the leader takes it again; one an
		// earlier spec deleted is created again by the leader.
		var leader string
		Eventually(func(g Gomega) {
			holder, store := leaseOf(g)
			leader = holder
			g.Expect(holder).NotTo(BeEmpty(), "no holder")
			g.Expect(store).To(Equal(mainStore))
		}).WithTimeout(20*time.Second).Should(Succeed(), "the leader holds the Lease and publishes its store's etcd cluster ID on it")

		// Same flags, same Lease, its own embedded etcd (Dir/advisor-etcd-second-replica).
		second, err := testEnv.StartAdvisorServing(suiteCtx, "second-replica")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(second.Stop(syscall.SIGTERM)).To(Succeed()) })
		Expect(second.EtcdDir).NotTo(Equal(main.EtcdDir))
		Expect(etcdClusterID("unix://" + filepath.Join(second.EtcdDir, "etcd.sock"))).NotTo(Equal(mainStore))

		Eventually(func() string { return probe(second, "/readyz/shared-storage") }).WithTimeout(60 * time.Second).Should(
			ContainSubstring("embedded etcd allows one replica: this replica's store (etcd cluster "))
		Expect(probe(second, "/readyz/shared-storage")).To(ContainSubstring("which leads the controller (etcd cluster " + mainStore))
		Expect(probe(second, "/readyz?verbose")).To(ContainSubstring("[-]shared-storage failed"))
		Consistently(func() string { return probe(main, "/readyz") }).WithTimeout(3*time.Second).Should(Equal("ok"), "the first replica stays ready")
		holder, store := leaseOf(Default)
		Expect(holder).To(Equal(leader), "the first replica still leads")
		Expect(store).To(Equal(mainStore))
	})
})

// probe GETs a health path of an instance as the admin: the body, or the
// error with the body of a failed check.
func probe(adv *env.Advisor, path string) string {
	cfg := rest.CopyConfig(testEnv.AdminConfig)
	cfg.Host = adv.URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, testEnv.ServingCAFile
	p, query, _ := strings.Cut(path, "?")
	req := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient().Get().AbsPath(p)
	if query != "" {
		req = req.Param(query, "1")
	}
	body, err := req.DoRaw(suiteCtx)
	if err != nil {
		return fmt.Sprintf("%s: %v", body, err)
	}
	return string(body)
}

// etcdClusterID reads the cluster ID of an etcd (hex, as on the Lease).
func etcdClusterID(endpoint string) string {
	GinkgoHelper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	resp, err := c.MemberList(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	return strconv.FormatUint(resp.Header.ClusterId, 16)
}

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
