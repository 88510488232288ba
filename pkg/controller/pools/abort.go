package pools

// Aborts: a person aborted an approved plan (POST .../abort). The pools
// its written MachineConfig items roll out on are paused, as when a
// maintenance window closes mid-rollout (a node already updating
// finishes, no other starts), and stay paused — whatever the pause's
// recorded end, and whoever paused them — until the config is approved
// again or deleted: the config controller then withdraws the hold and the
// pause ends as a coalescing pause of ours does.

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// AbortHold is the hold of an aborted plan on the pools that render its
// written MachineConfig changes.
type AbortHold struct {
	// PlanHash and At name the abort (status.abort), ApprovalSequence
	// the approval it aborted.
	PlanHash         string
	At               time.Time
	ApprovalSequence int64
	Changes          []machineconfig.Change
}

// endedBy is true when the approval seen (its sequence, plan and time)
// came after the abort. Sequences order approvals within a second; an
// approval without one (written before approvals were numbered) is
// ordered by its time, which has seconds only: one in the abort's second
// counts when it approves another plan.
func (h AbortHold) endedBy(sequence int64, planHash string, approvedAt time.Time) bool {
	if sequence == 0 {
		return approvedAt.After(h.At) || approvedAt.Equal(h.At) && planHash != h.PlanHash
	}
	// Not before the abort either: a sequence started again (an approval
	// dropped when its policy lapsed) does not pass for a later one.
	return sequence > h.ApprovalSequence && !approvedAt.Before(h.At)
}

// same is true when both holds are of one abort.
func (h AbortHold) same(o AbortHold) bool {
	return h.PlanHash == o.PlanHash && h.At.Equal(o.At) && h.ApprovalSequence == o.ApprovalSequence
}

// HoldAborted records that config's plan was aborted while these
// MachineConfig changes of it were written or being written: every pool
// that renders one of them is held paused. The pools are looked at again
// when the hold changed. Only a newer approval (ReleaseAborted) or the
// config's deletion (Forget) ends it: a reconcile from a cache that has
// not seen the abort yet does not.
func (c *Controller) HoldAborted(config string, hold AbortHold) {
	if c.index.setAborted(config, hold) {
		c.Resync()
	}
}

// ReleaseAborted ends config's abort hold when the approval seen
// (sequence, planHash approved at approvedAt) came after the abort.
func (c *Controller) ReleaseAborted(config string, sequence int64, planHash string, approvedAt time.Time) {
	if c.index.releaseAborted(config, sequence, planHash, approvedAt) {
		c.Resync()
	}
}

// setAborted records config's abort hold; false when unchanged. The
// changes an abort holds only grow: what was held for it stays held.
func (x *index) setAborted(config string, hold AbortHold) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	had, held := x.aborts[config]
	if held && had.same(hold) {
		for _, c := range had.Changes {
			if !slices.ContainsFunc(hold.Changes, c.SameObject) {
				hold.Changes = append(hold.Changes, c)
			}
		}
	}
	x.aborts[config] = hold
	return !held || !reflect.DeepEqual(had, hold)
}

// releaseAborted drops config's abort hold when an approval made after
// the abort is seen; false when nothing changed.
func (x *index) releaseAborted(config string, sequence int64, planHash string, approvedAt time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	hold, held := x.aborts[config]
	if !held || !hold.endedBy(sequence, planHash, approvedAt) {
		return false
	}
	delete(x.aborts, config)
	return true
}

// dropAborted drops config's abort hold (the config is gone).
func (x *index) dropAborted(config string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, held := x.aborts[config]
	delete(x.aborts, config)
	return held
}

// abortedOn lists the configs whose abort holds pool paused, sorted;
// pools are all the pools.
func (x *index) abortedOn(pool *unstructured.Unstructured, pools []unstructured.Unstructured) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for config, hold := range x.aborts {
		for _, change := range hold.Changes {
			if ok, err := change.RolledBy(pool, pools); err != nil || ok {
				// A change that cannot be matched holds the pool: a
				// pause kept too long is safer than a drain resumed.
				out = append(out, config)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// PauseAborted holds, as HoldAborted does, the pools that render the
// changes of config's aborted plan, and pauses at once those of them that
// are rolling out, before the abort is answered: the node in flight
// finishes, no other starts. It is the pool reconcile itself, called for
// each such pool rather than queued.
func (c *Controller) PauseAborted(ctx context.Context, config string, hold AbortHold) error {
	c.HoldAborted(config, hold)
	if len(hold.Changes) == 0 {
		return nil
	}
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return err
	}
	var errs []error
	for i := range pools {
		if !slices.Contains(c.index.abortedOn(&pools[i], pools), config) {
			continue
		}
		if _, err := c.Reconcile(ctx, pools[i].GetName()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
