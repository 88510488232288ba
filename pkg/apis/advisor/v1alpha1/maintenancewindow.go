package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaintenanceWindowKind says what an open window does to the pools it selects.
// +enum
type MaintenanceWindowKind string

const (
	// MaintenanceWindowKindAllow: the selected pools' nodes may be disrupted
	// only while one of their Allow windows is open.
	MaintenanceWindowKindAllow MaintenanceWindowKind = "Allow"
	// MaintenanceWindowKindDeny is a freeze: while it is open, the selected
	// pools' nodes are not disrupted, whatever Allow window is open.
	MaintenanceWindowKindDeny MaintenanceWindowKind = "Deny"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MaintenanceWindow says when the nodes of MachineConfigPools may be
// drained and rebooted. A pool selected by at least one Allow window is
// windowed: approved MachineConfig changes for it are written only while
// one of its Allow windows is open. A Deny window (a freeze) beats every
// Allow window. Pools that no window selects are not restricted.
type MaintenanceWindow struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says when the window opens, for how long, and which pools it selects.
	Spec MaintenanceWindowSpec `json:"spec"`
	// status is computed from the spec and the server's clock on every
	// read; it is never stored, and changes with time without a watch event.
	// +optional
	Status MaintenanceWindowStatus `json:"status,omitempty"`
}

// MaintenanceWindowSpec is when a maintenance window opens and which pools it selects.
type MaintenanceWindowSpec struct {
	// pools selects MachineConfigPools by label; an empty selector ({})
	// selects every pool. At least one of pools and poolNames is required;
	// a pool either selects is selected.
	// +optional
	Pools *metav1.LabelSelector `json:"pools,omitempty"`
	// poolNames selects MachineConfigPools by name, e.g. [worker].
	// +optional
	// +listType=set
	PoolNames []string `json:"poolNames,omitempty"`
	// schedule is when the window opens: a standard 5-field cron expression
	// (minute hour day-of-month month day-of-week) read on the wall clock of
	// timeZone, e.g. "0 22 * * 6" for Saturdays at 22:00. An opening the
	// clocks skip (a change to summer time) happens when they jump; one they
	// repeat happens once.
	Schedule string `json:"schedule"`
	// duration is how long the window stays open after each opening, as
	// elapsed time, e.g. "8h" or "90m". It must be positive and no longer
	// than the shortest time between two openings of the schedule.
	Duration metav1.Duration `json:"duration"`
	// timeZone is the IANA time zone the schedule is read in, e.g.
	// Europe/Berlin (default UTC).
	// +optional
	// +default="UTC"
	TimeZone string `json:"timeZone,omitempty"`
	// kind is Allow (the default: the selected pools may be disrupted only
	// while one of their Allow windows is open) or Deny (a freeze: they are
	// not disrupted while it is open, whatever Allow window is open).
	// +optional
	// +default="Allow"
	Kind MaintenanceWindowKind `json:"kind,omitempty"`
	// description says what the window is for, for people.
	// +optional
	Description string `json:"description,omitempty"`
}

// MaintenanceWindowStatus is where a window stands, computed on every read.
type MaintenanceWindowStatus struct {
	// open is true while the window is open.
	// +optional
	Open bool `json:"open"`
	// opensAt is when the current opening began (open) or when the next
	// one begins (closed); unset when it does not open within five years.
	// +optional
	OpensAt *metav1.Time `json:"opensAt,omitempty"`
	// closesAt is when that opening ends, openings that touch or overlap
	// counting as one; unset when no end is in sight.
	// +optional
	ClosesAt *metav1.Time `json:"closesAt,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MaintenanceWindowList is a list of MaintenanceWindows.
type MaintenanceWindowList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []MaintenanceWindow `json:"items"`
}
