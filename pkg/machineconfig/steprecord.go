package machineconfig

import (
	"encoding/json"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What a stepped rollout keeps on its pool, in annotations of ours set
// only while our pause holds the pool (the admission policy admits them
// then, and only as JSON of a bounded size): whichever replica leads next
// reads the step in flight, or the halt, from the pool itself.
const (
	// StepAnnotation on a MachineConfigPool records the step of a stepped
	// rollout in flight (PoolStep).
	StepAnnotation = "advisor.kubevirt.io/step"
	// HaltAnnotation on a MachineConfigPool records that a gate tripped
	// between two steps (PoolHalt): the pool stays paused until an
	// approver resumes, aborts or reverts the rollout.
	HaltAnnotation = "advisor.kubevirt.io/halted"
	// MaxRecordBytes bounds either annotation's value.
	MaxRecordBytes = 8192
)

// PoolStep is the step of a pool's rollout in flight: the nodes the MCO
// targeted together, the rendered config they update to, when, and which
// other nodes of the pool were already not Ready then (they do not trip
// the node gate).
type PoolStep struct {
	Nodes    []string  `json:"nodes"`
	Desired  string    `json:"desired,omitempty"`
	Started  time.Time `json:"started"`
	NotReady []string  `json:"notReady,omitempty"`
	// Firing are the alerts (their keys) firing as the step started.
	Firing []string `json:"firing,omitempty"`
	// NotReadyVMs are the VMs (namespace/name) on the step's nodes that
	// were not Ready as it started: a VM the step moves must be Ready
	// again only where it was. VMsUnknown: they could not be read (or
	// did not fit the record), and no moved VM must be Ready again.
	NotReadyVMs []string `json:"notReadyVMs,omitempty"`
	VMsUnknown  bool     `json:"vmsUnknown,omitempty"`
}

// WasReady says whether the VM namespace/name was Ready as the step
// started, as far as the record knows.
func (s *PoolStep) WasReady(vm string) bool {
	return !s.VMsUnknown && !slices.Contains(s.NotReadyVMs, vm)
}

// PoolHalt is a halted rollout: which gate tripped, on which node, why,
// when, and the approvals in force then (config name to its approval's
// sequence). Only a later approval of one of them, their abort or their
// deletion ends it: an editor's spec change does not.
type PoolHalt struct {
	Gate      string           `json:"gate"`
	Node      string           `json:"node,omitempty"`
	Message   string           `json:"message"`
	Evidence  []string         `json:"evidence,omitempty"`
	At        time.Time        `json:"at"`
	Approvals map[string]int64 `json:"approvals"`
}

// ReadStep is the step recorded on pool, nil when there is none (or it
// cannot be read: the step is then taken again from the nodes).
func ReadStep(pool *unstructured.Unstructured) *PoolStep {
	var s PoolStep
	if !readRecord(pool, StepAnnotation, &s) || len(s.Nodes) == 0 {
		return nil
	}
	return &s
}

// ReadHalt is the halt recorded on pool, nil when there is none. A halt
// that cannot be read still halts: it names no approval, so only its
// configs' abort, revert or deletion — or a person removing it — ends it.
func ReadHalt(pool *unstructured.Unstructured) *PoolHalt {
	raw, found := pool.GetAnnotations()[HaltAnnotation]
	if !found {
		return nil
	}
	var h PoolHalt
	if err := json.Unmarshal([]byte(raw), &h); err != nil || h.Gate == "" {
		return &PoolHalt{Gate: "unknown", Message: "the halt recorded on the pool (annotation " + HaltAnnotation + ") cannot be read"}
	}
	return &h
}

func readRecord(pool *unstructured.Unstructured, annotation string, into any) bool {
	raw, found := pool.GetAnnotations()[annotation]
	return found && json.Unmarshal([]byte(raw), into) == nil
}

// Encode is the annotation value of a record, cut to MaxRecordBytes by
// dropping the evidence and message tails that do not fit.
func (h PoolHalt) Encode() string {
	for {
		b, _ := json.Marshal(h)
		if len(b) <= MaxRecordBytes || (len(h.Evidence) == 0 && len(h.Message) <= 256) {
			return string(b)
		}
		if len(h.Evidence) > 0 {
			h.Evidence = h.Evidence[:len(h.Evidence)-1]
			continue
		}
		h.Message = h.Message[:256]
	}
}

// Encode is the annotation value of a step record; VMs that do not fit
// within MaxRecordBytes are dropped (VMsUnknown).
func (s PoolStep) Encode() string {
	b, _ := json.Marshal(s)
	if len(b) > MaxRecordBytes && len(s.NotReadyVMs) > 0 {
		s.NotReadyVMs, s.VMsUnknown = nil, true
		b, _ = json.Marshal(s)
	}
	return string(b)
}

// Releases is true when cfg's approval of sequence seq ends the halt: a
// later approval of a config the halt names.
func (h *PoolHalt) Releases(config string, seq int64) bool {
	was, named := h.Approvals[config]
	return named && seq > was
}
