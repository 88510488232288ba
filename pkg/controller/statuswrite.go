package controller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// statusWrites writes the status of configs, and remembers the writes
// whose watch events need no reconcile (the reconcile that made them
// planned already).
type statusWrites struct {
	status   StatusWriter
	recorder record.EventRecorder
	metrics  Metrics
	lister   listers.VirtPlatformConfigLister
	// ownWrites is, per config, the resourceVersion of the controller's
	// last status write that needs no further reconcile: its watch event
	// is dropped instead of planning again for nothing, unless a
	// reconcile read the cache before it held the write (see cached).
	ownWrites sync.Map
	// writing is, per config, the status write in flight that will need
	// no further reconcile (a pendingWrite): its watch event can come
	// before the write's answer, and before ownWrites holds its
	// resourceVersion.
	writing sync.Map
}

// own marks the write that left cfg as it is as one whose event needs
// no reconcile: this reconcile goes on from it.
func (w *statusWrites) own(cfg *v1alpha1.VirtPlatformConfig) {
	w.ownWrites.Store(cfg.Name, cfg.ResourceVersion)
}

// forget drops what is remembered of a deleted config.
func (w *statusWrites) forget(config string) { w.ownWrites.Delete(config) }

// write writes cfg's status and refreshes cfg from the answer. Only
// once it is stored does it tell anyone: an Event when the phase changed,
// and the Approved event and metric when the controller recorded a
// standing approval (action Apply, a policy), so that a write that lost a conflict
// leaves no trace but its error.
func (w *statusWrites) write(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, before *v1alpha1.VirtPlatformConfigStatus) error {
	if p, _ := status.Lookup(cfg.Status.Phase); p.Step != status.StepProgress {
		w.writing.Store(cfg.Name, newPendingWrite(cfg))
	}
	updated, err := w.status.UpdateStatus(ctx, cfg)
	w.writing.Delete(cfg.Name)
	if err != nil {
		return err
	}
	if a := updated.Status.Approval; a != nil && !apiequality.Semantic.DeepEqual(a, before.Approval) {
		w.announceApproval(updated, a)
	}
	if updated.Status.Phase != before.Phase {
		w.phaseEvent(updated)
	}
	if wait := status.WaitingFor(&updated.Status); wait != nil {
		// The phase stays InProgress: the wait is an Event of its own.
		if b := status.WaitingFor(before); b == nil || b.Reason != wait.Reason || b.Message != wait.Message {
			w.recorder.Event(updated, "Normal", "Waiting", status.PhaseMessage(&updated.Status))
		}
	}
	// The watch event of this write needs no reconcile (the controller
	// does not plan again after its own writes), except when the phase
	// it wrote has work to do at once: an approval to apply.
	if p, _ := status.Lookup(updated.Status.Phase); p.Step == status.StepProgress {
		w.ownWrites.Delete(updated.Name)
	} else {
		w.ownWrites.Store(updated.Name, updated.ResourceVersion)
	}
	*cfg = *updated
	return nil
}

func (w *statusWrites) phaseEvent(cfg *v1alpha1.VirtPlatformConfig) {
	eventType := "Normal"
	if status.IsWarning(cfg.Status.Phase) {
		eventType = "Warning"
	}
	w.recorder.Event(cfg, eventType, string(cfg.Status.Phase), status.PhaseMessage(&cfg.Status))
}

// announceApproval tells of a standing approval the controller recorded
// and stored, by a policy or by action Apply: the Approved event and the
// metrics.
func (w *statusWrites) announceApproval(cfg *v1alpha1.VirtPlatformConfig, a *v1alpha1.ApprovalRecord) {
	w.metrics.Approved()
	name, byPolicy := policies.PolicyOf(a.ApprovedBy)
	if !byPolicy {
		w.recorder.Eventf(cfg, "Normal", "Approved", "Plan %s approved by %s (action Apply)", a.PlanHash, a.ApprovedBy)
		return
	}
	if m, ok := w.metrics.(policyMetrics); ok {
		m.PolicyApproved(name)
	}
	w.recorder.Eventf(cfg, "Normal", "Approved", "Plan %s approved by %s", a.PlanHash, a.ApprovedBy)
}

// ownWrite is true for the event of a status write of ours after which
// there was nothing left to do (see write).
func (w *statusWrites) ownWrite(obj interface{}) bool {
	cfg, ok := obj.(*v1alpha1.VirtPlatformConfig)
	if !ok {
		return false
	}
	if rv, ok := w.ownWrites.Load(cfg.Name); ok && rv == cfg.ResourceVersion {
		return true
	}
	pending, ok := w.writing.Load(cfg.Name)
	return ok && pending.(pendingWrite).is(cfg)
}

// pendingWrite is a status write in flight: the status written on the
// config of that generation and resourceVersion.
type pendingWrite struct {
	generation      int64
	resourceVersion string
	// stored is the status as storage will hold it (times in seconds, as
	// serialized); made only when an event comes during the write, which
	// is rare, rather than before every write (nil: it cannot be).
	stored func() *v1alpha1.VirtPlatformConfigStatus
}

// newPendingWrite is the write of cfg's status.
func newPendingWrite(cfg *v1alpha1.VirtPlatformConfig) pendingWrite {
	written := cfg.Status.DeepCopy()
	return pendingWrite{generation: cfg.Generation, resourceVersion: cfg.ResourceVersion,
		stored: sync.OnceValue(func() *v1alpha1.VirtPlatformConfigStatus {
			raw, err := json.Marshal(written)
			if err != nil {
				return nil
			}
			st := &v1alpha1.VirtPlatformConfigStatus{}
			if err := json.Unmarshal(raw, st); err != nil {
				return nil
			}
			return st
		})}
}

// is true for the config that write leads to: the next version of the
// same spec with exactly that status.
func (w pendingWrite) is(cfg *v1alpha1.VirtPlatformConfig) bool {
	if cfg.Generation != w.generation || cfg.ResourceVersion == w.resourceVersion {
		return false
	}
	st := w.stored()
	return st != nil && apiequality.Semantic.DeepEqual(&cfg.Status, st)
}

// cached reads a config from the informer's cache for a reconcile. A
// cache that does not hold the controller's last status write yet (its
// event still on the way, behind a target's) is behind storage: the read
// returns errCacheBehind, and that write's event, no longer dropped as our
// own, brings the config back. (Deciding from the older object would
// check and write on old news, be refused by storage and take the watch
// events meant for the next reconcile.) The mark is dropped before the
// read: an event the handler dropped before that was in the cache already
// (an informer updates its cache before it tells its handlers), so the
// read sees the write.
func (w *statusWrites) cached(name string) (*v1alpha1.VirtPlatformConfig, error) {
	own, marked := w.ownWrites.LoadAndDelete(name)
	cfg, err := w.lister.Get(name)
	if !marked || err != nil {
		return cfg, err
	}
	switch {
	case cfg.ResourceVersion == own:
		// The cache holds the write: its event still needs no reconcile.
		w.ownWrites.LoadOrStore(name, own)
	case olderThan(cfg.ResourceVersion, own.(string)):
		return nil, errCacheBehind
	}
	return cfg, nil
}

// errCacheBehind: the informer's cache does not hold the controller's last
// status write of the config yet.
var errCacheBehind = errors.New("the cache is behind the controller's last status write")

// olderThan is true when resourceVersion rv comes before own. Both are
// revisions of the server's own storage, which the server may compare
// (clients may not: to them a resourceVersion is opaque).
func olderThan(rv, own string) bool {
	if rv == "" || own == "" {
		return false // the versioner reads "" as 0
	}
	var versioner storage.APIObjectVersioner
	a, errA := versioner.ParseResourceVersion(rv)
	b, errB := versioner.ParseResourceVersion(own)
	return errA == nil && errB == nil && a < b
}
