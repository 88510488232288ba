package advisor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaintenanceWindowKind says what an open window does to the pools it selects.
type MaintenanceWindowKind string

const (
	// MaintenanceWindowKindAllow: the selected pools' nodes may be disrupted
	// only while one of their Allow windows is open.
	MaintenanceWindowKindAllow MaintenanceWindowKind = "Allow"
	// MaintenanceWindowKindDeny is a freeze that beats every Allow window.
	MaintenanceWindowKindDeny MaintenanceWindowKind = "Deny"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MaintenanceWindow says when the nodes of MachineConfigPools may be
// drained and rebooted.
type MaintenanceWindow struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec MaintenanceWindowSpec
	// Status is computed on every read, never stored.
	Status MaintenanceWindowStatus
}

// MaintenanceWindowSpec is when a maintenance window opens and which pools it selects.
type MaintenanceWindowSpec struct {
	// Pools selects MachineConfigPools by label; {} selects every pool.
	Pools *metav1.LabelSelector
	// PoolNames selects MachineConfigPools by name.
	PoolNames []string
	// Schedule is a standard 5-field cron expression read in TimeZone.
	Schedule string
	// Duration is how long each opening lasts.
	Duration metav1.Duration
	// TimeZone is an IANA time zone.
	TimeZone string
	// Kind is Allow or Deny.
	Kind MaintenanceWindowKind
	// Description is for people.
	Description string
}

// MaintenanceWindowStatus is where a window stands, computed on every read.
type MaintenanceWindowStatus struct {
	Open     bool
	OpensAt  *metav1.Time
	ClosesAt *metav1.Time
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MaintenanceWindowList is a list of MaintenanceWindows.
type MaintenanceWindowList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []MaintenanceWindow
}
