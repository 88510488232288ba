package sharedstorage

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// lease is the controller's Lease held by holder, renewed renewedAgo,
// labelled with the holder's store.
func lease(holder, storeID string, renewedAgo time.Duration) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "virt-advisor", Name: "virt-advisor-controller"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To(int32(15)),
			RenewTime:            ptr.To(metav1.NewMicroTime(now.Add(-renewedAgo))),
		},
	}
	if storeID != "" {
		l.Labels = map[string]string{LeaseLabel: storeID}
	}
	return l
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lease    *coordinationv1.Lease
		embedded bool
		// want are substrings of the error; none: ready.
		want []string
	}{
		{name: "no Lease yet", lease: nil},
		{name: "this replica's store leads", lease: lease("pod-0_a", "abc", time.Second)},
		{name: "a leader of an earlier version (no label)", lease: lease("pod-0_a", "", time.Second)},
		{name: "another embedded store leads", lease: lease("pod-0_a", "def", time.Second), embedded: true,
			want: []string{"embedded etcd allows one replica", "this replica's store (etcd cluster abc)", "pod-0_a", "etcd cluster def", "Lease virt-advisor/virt-advisor-controller", "--etcd-servers"}},
		{name: "another external etcd leads", lease: lease("pod-0_a", "def", time.Second),
			want: []string{"replicas must share their storage", "etcd (cluster abc)", "etcd cluster def", "the same --etcd-servers"}},
		{name: "an expired Lease tells nothing", lease: lease("pod-0_a", "def", 16*time.Second), embedded: true},
		{name: "a released Lease tells nothing", lease: lease("", "def", time.Second), embedded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verdict(tc.lease, "abc", tc.embedded, now)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("verdict = %v, want ready", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("verdict = ready, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("verdict = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	var current *coordinationv1.Lease
	var readErr error
	c := &Check{Embedded: true, Now: func() time.Time { return now },
		Lease: func() (*coordinationv1.Lease, error) { return current, readErr }}
	if c.Name() != "shared-storage" {
		t.Errorf("Name() = %q", c.Name())
	}
	current = lease("pod-0_a", "def", time.Second)
	if err := c.Check(readyz); err != nil {
		t.Fatalf("failed before knowing its own store: %v", err)
	}
	c.SetClusterID("abc")
	if err := c.Check(readyz); err == nil || !strings.Contains(err.Error(), "embedded etcd allows one replica") {
		t.Fatalf("Check() = %v, want the one-replica message", err)
	}
	current = lease("pod-1_b", "abc", time.Second) // this replica took over
	if err := c.Check(readyz); err != nil {
		t.Fatalf("Check() = %v once its own store leads", err)
	}
	readErr = errors.New("leases.coordination.k8s.io is forbidden")
	if err := c.Check(readyz); err == nil || !strings.Contains(err.Error(), "reading the controller's Lease: leases.coordination.k8s.io is forbidden") {
		t.Fatalf("Check() = %v, want the read error", err)
	}
}

func TestClusterIDTellsStoresApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := func(dir string) string {
		t.Helper()
		e, err := embeddedetcd.Start(dir, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		got, err := ClusterID(ctx, storagebackend.TransportConfig{ServerList: []string{e.ClientURL}})
		if err != nil {
			t.Fatal(err)
		}
		if got != e.ClusterID() {
			t.Errorf("ClusterID through a client = %s, the embedded etcd says %s", got, e.ClusterID())
		}
		return got
	}
	base := t.TempDir()
	a, b, again := id(filepath.Join(base, "a")), id(filepath.Join(base, "b")), id(filepath.Join(base, "a"))
	if a == b {
		t.Errorf("two stores, one cluster ID %s", a)
	}
	if a != again {
		t.Errorf("one store, two cluster IDs: %s, %s", a, again)
	}
}

// readyz is a request of the check.
var readyz = httptest.NewRequest("GET", "/readyz/shared-storage", nil)
