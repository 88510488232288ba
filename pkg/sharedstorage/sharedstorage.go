// Package sharedstorage tells when replicas of the server do not share
// their storage. Each replica with a store of its own (two embedded etcds,
// or different external etcd clusters) would hold its own configs and
// approvals, and which one a user reached would decide what is applied.
//
// The replica leading the controller labels its Lease with its store's
// etcd cluster ID, in the same write that takes or renews the Lease (see
// controller.Config.LeaseLabels); every replica compares that label with
// its own store's ID, and one whose ID differs reports not ready, so that
// requests reach only replicas on the leader's store.
package sharedstorage

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeaseLabel on the controller's Lease is the etcd cluster ID of the
// leader's store.
const LeaseLabel = "advisor.kubevirt.io/storage-cluster-id"

// ClusterID reads the cluster ID of the etcd the storage uses: the same
// for every replica on one etcd cluster, different for every embedded
// store.
func ClusterID(ctx context.Context, t storagebackend.TransportConfig) (string, error) {
	tlsInfo := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
	cfg := clientv3.Config{Endpoints: t.ServerList, DialTimeout: 10 * time.Second, Context: ctx}
	if !tlsInfo.Empty() || t.TrustedCAFile != "" {
		tlsConfig, err := tlsInfo.ClientConfig()
		if err != nil {
			return "", fmt.Errorf("etcd client TLS: %w", err)
		}
		cfg.TLS = tlsConfig
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return "", fmt.Errorf("connecting to etcd: %w", err)
	}
	defer func() { _ = c.Close() }()
	resp, err := c.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the etcd cluster ID: %w", err)
	}
	return strconv.FormatUint(resp.Header.ClusterId, 16), nil
}

// LeaseGetter returns the controller's Lease; nil when there is none.
type LeaseGetter func() (*coordinationv1.Lease, error)

// Check is the readyz check "shared-storage". It passes until the
// replica knows its own store's ID (the start sequence, reported by its
// own check, reads it).
type Check struct {
	// Embedded: the store is the embedded etcd (one replica only).
	Embedded bool
	// Lease reads the controller's Lease.
	Lease LeaseGetter
	// Now is time.Now if nil.
	Now func() time.Time

	mu     sync.Mutex
	own    string
	logged string
}

// Name is the readyz check's name: /readyz/shared-storage.
func (c *Check) Name() string { return "shared-storage" }

// SetClusterID records this replica's store's ID.
func (c *Check) SetClusterID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own = id
}

// Check fails while the replica leading the controller runs on another
// store; a change of verdict is logged with the request's logger.
func (c *Check) Check(r *http.Request) error {
	c.mu.Lock()
	own := c.own
	c.mu.Unlock()
	if own == "" || c.Lease == nil {
		return nil
	}
	lease, err := c.Lease()
	if err != nil {
		return fmt.Errorf("reading the controller's Lease: %w", err)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	err = verdict(lease, own, c.Embedded, now())
	c.log(klog.FromContext(r.Context()), err)
	return err
}

// log says it once when the verdict changes.
func (c *Check) log(logger klog.Logger, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.mu.Lock()
	changed := msg != c.logged
	c.logged = msg
	c.mu.Unlock()
	switch {
	case !changed:
	case err != nil:
		logger.Error(err, "Not ready: this replica does not share the leader's storage")
	default:
		logger.Info("This replica shares the storage of the replica leading the controller")
	}
}

// verdict compares this replica's store (own) with the one the Lease's
// current holder published. A Lease without a holder, expired, or
// without the label (a leader of an earlier version) tells nothing.
func verdict(lease *coordinationv1.Lease, own string, embedded bool, now time.Time) error {
	if lease == nil {
		return nil
	}
	leader := lease.Labels[LeaseLabel]
	if leader == "" || leader == own || !held(lease, now) {
		return nil
	}
	holder := *lease.Spec.HolderIdentity
	if embedded {
		return fmt.Errorf("embedded etcd allows one replica: this replica's store (etcd cluster %s) is not the one of %s, which leads the controller (etcd cluster %s, Lease %s/%s); "+
			"run one replica, or point every replica at one etcd cluster with --etcd-servers",
			own, holder, leader, lease.Namespace, lease.Name)
	}
	return fmt.Errorf("replicas must share their storage: this replica's etcd (cluster %s) is not the one of %s, which leads the controller (etcd cluster %s, Lease %s/%s); "+
		"give every replica the same --etcd-servers",
		own, holder, leader, lease.Namespace, lease.Name)
}

// held: someone holds the Lease and renewed it within its duration.
func held(lease *coordinationv1.Lease, now time.Time) bool {
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
