package env

// THROWAWAY: removed before handing back.

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestZZSmoke(t *testing.T) {
	bin := os.Getenv("SMOKE_BIN_DIR")
	if bin == "" {
		t.Skip()
	}
	ctx := context.Background()
	start := time.Now()
	e, err := Start(ctx, Options{BinDir: bin, Log: os.Stderr, AdvisorArgs: strings.Fields(os.Getenv("SMOKE_ADVISOR_ARGS")), AdvisorSharedEtcd: os.Getenv("SMOKE_SHARED") != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	t.Logf("Start took %s", time.Since(start))

	// user without permissions
	cfg, kc, err := e.UserConfig("alice", "testers")
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	t.Logf("alice list namespaces: %v", err)
	out, _, err := e.Kubectl(ctx, kc, "auth", "whoami")
	t.Logf("alice whoami: %s %v", out, err)
	out, _, err = e.Kubectl(ctx, kc, "auth", "can-i", "create", "virtplatformconfigs", "--subresource=approve")
	t.Logf("alice can-i approve: %q %v", out, err)
	out, _, err = e.Kubectl(ctx, "", "get", "--raw", "/apis/advisor.kubevirt.io/v1alpha1")
	t.Logf("admin discovery: %s %v", out, err)
	if err != nil {
		t.Error(err)
	}

	// restart
	start = time.Now()
	if err := e.RestartAdvisor(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAdvisor took %s", time.Since(start))
	out, _, err = e.Kubectl(ctx, "", "get", "--raw", "/apis/advisor.kubevirt.io/v1alpha1")
	if err != nil {
		t.Error(err)
	}

	// second instance
	a2, err := e.StartAdvisor(ctx, "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replica-2 on %s etcd %s", a2.URL, a2.EtcdDir)
	if _, err := e.StartAdvisor(ctx, "replica-2"); err == nil {
		t.Error("starting a running name twice succeeded")
	} else {
		t.Logf("double start: %v", err)
	}
	if err := a2.Stop(syscall.SIGKILL); err != nil {
		t.Error(err)
	}
	a3, err := e.StartAdvisor(ctx, "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	if a3.Port != a2.Port {
		t.Errorf("restarted replica on port %d, want %d", a3.Port, a2.Port)
	}
	// kill main and check the error path of readiness
	if err := e.Advisor().Stop(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM main: %v", err)
	}
	if err := e.RestartAdvisor(ctx); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SMOKE_SHARED") != "" {
		if out, _, err := e.Kubectl(ctx, "", "apply", "-f", "artifacts/samples/load-aware-rebalancing.yaml"); err != nil {
			t.Fatal(err)
		} else {
			t.Log(out)
		}
		if err := e.RegisterAdvisor(ctx, a3); err != nil {
			t.Fatal(err)
		}
		old := e.Advisor()
		t.Logf("registered %s", old.Name)
		if err := e.advisors[MainAdvisorName].Stop(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		out, _, err := e.Kubectl(ctx, "", "get", "vpc", "-o", "name")
		t.Logf("after failover: %s %v", out, err)
		if !strings.Contains(out, "load-aware-rebalancing") {
			t.Error("VPC lost after failover")
		}
		if err := e.RestartAdvisor(ctx); err != nil {
			t.Fatal(err)
		}
		out, _, err = e.Kubectl(ctx, "", "get", "vpc")
		t.Logf("after restart of %s: %s %v", e.Advisor().Name, out, err)
	}
	start = time.Now()
	e.Stop()
	t.Logf("Stop took %s", time.Since(start))
	e.Stop()
}
