package app

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	d := func(s string) metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.Duration{Duration: v}
	}
	tests := []struct {
		name   string
		modify func(*Options)
		// want are substrings of the error; none: valid.
		want []string
	}{
		{name: "defaults", modify: func(*Options) {}},
		{name: "leader election off ignores its durations", modify: func(o *Options) {
			o.LeaderElection.LeaderElect = false
			o.LeaderElection.LeaseDuration = d("0s")
		}},
		{name: "the e2e suite's short lease", modify: func(o *Options) {
			o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = d("4s"), d("3s"), d("500ms")
		}},
		{name: "lease equal to renew deadline", modify: func(o *Options) {
			o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline = d("10s"), d("10s")
		}, want: []string{"--leader-elect-lease-duration (10s) must be greater than --leader-elect-renew-deadline (10s)"}},
		{name: "lease shorter than renew deadline", modify: func(o *Options) {
			o.LeaderElection.LeaseDuration = d("5s")
		}, want: []string{"--leader-elect-lease-duration (5s) must be greater than --leader-elect-renew-deadline (10s)"}},
		{name: "renew deadline within the jittered retry period", modify: func(o *Options) {
			o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = d("2400ms"), d("2s")
		}, want: []string{"--leader-elect-renew-deadline (2.4s) must be greater than 1.2 × --leader-elect-retry-period (2s)"}},
		{name: "renew deadline just above the jittered retry period", modify: func(o *Options) {
			o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = d("2401ms"), d("2s")
		}},
		{name: "zero and negative durations", modify: func(o *Options) {
			o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = d("0s"), d("-1s"), d("0s")
		}, want: []string{
			"--leader-elect-lease-duration must be greater than zero, got 0s",
			"--leader-elect-renew-deadline must be greater than zero, got -1s",
			"--leader-elect-retry-period must be greater than zero, got 0s",
		}},
		{name: "not a Lease", modify: func(o *Options) { o.LeaderElection.ResourceLock = "endpoints" },
			want: []string{`--leader-elect-resource-lock must be leases, not "endpoints"`}},
		{name: "no Lease name", modify: func(o *Options) { o.LeaderElection.ResourceName = "" },
			want: []string{"--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty"}},
		{name: "no plan slots", modify: func(o *Options) { o.MaxConcurrentPlans = 0 },
			want: []string{"--max-concurrent-plans must be greater than zero, got 0"}},
		{name: "no plan wait", modify: func(o *Options) { o.PlanWaitTimeout = 0 },
			want: []string{"--plan-wait-timeout must be greater than zero, got 0s"}},
		{name: "plan wait as long as a request", modify: func(o *Options) {
			o.PlanWaitTimeout, o.ServerRun.RequestTimeout = time.Minute, time.Minute
		}, want: []string{"--plan-wait-timeout (1m0s) must be shorter than --request-timeout (1m0s)"}},
		{name: "no coalescing window", modify: func(o *Options) { o.RolloutCoalesceWindow = 0 }},
		{name: "negative coalescing window", modify: func(o *Options) { o.RolloutCoalesceWindow = -time.Second },
			want: []string{"--rollout-coalesce-window must be 0 (no pause) or more, got -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:2379"}
			tt.modify(o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestEmbeddedEtcdOptions(t *testing.T) {
	tests := []struct {
		name        string
		etcdServers []string
		dir         string
		wantServers []string
		wantErr     string
	}{
		{name: "default: the embedded etcd's socket", dir: "/var/lib/virt-advisor/etcd",
			wantServers: []string{"unix:///var/lib/virt-advisor/etcd/etcd.sock"}},
		{name: "external etcd", etcdServers: []string{"https://etcd-0:2379"}, dir: "/var/lib/virt-advisor/etcd",
			wantServers: []string{"https://etcd-0:2379"}},
		{name: "no dir", dir: "", wantErr: "--embedded-etcd-dir must not be empty"},
		{name: "a socket path longer than a unix address", dir: "/" + strings.Repeat("x", 100),
			wantErr: "is too long: the embedded etcd's socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.Recommended.Etcd.StorageConfig.Transport.ServerList = tt.etcdServers
			o.EmbeddedEtcdDir = tt.dir
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if got := o.Recommended.Etcd.StorageConfig.Transport.ServerList; strings.Join(got, ",") != strings.Join(tt.wantServers, ",") {
				t.Errorf("storage servers %q, want %q", got, tt.wantServers)
			}
			if o.UsesEmbeddedEtcd() != (len(tt.etcdServers) == 0) {
				t.Errorf("UsesEmbeddedEtcd() = %v", o.UsesEmbeddedEtcd())
			}
		})
	}
}

func TestDefaultRolloutCoalesceWindow(t *testing.T) {
	if got := NewOptions().RolloutCoalesceWindow; got != 30*time.Second {
		t.Errorf("default --rollout-coalesce-window %s, want 30s", got)
	}
}

// The storage has no watch cache unless --watch-cache asks for one.
func TestWatchCacheOnlyWhenAsked(t *testing.T) {
	for args, want := range map[string]bool{"": false, "--watch-cache=true": true, "--watch-cache=false": false} {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if got := o.Recommended.Etcd.EnableWatchCache; got != want {
			t.Errorf("%q: watch cache %v, want %v", args, got, want)
		}
	}
}
