// Package disruption decides, without I/O, what rolling a MachineConfig
// change out does to the nodes of a MachineConfigPool and to the
// VirtualMachineInstances running there:
//
//   - which action each node goes through (Reboot, Drain, Restart, Reload,
//     DaemonReload, None), from the change itself and the cluster's node
//     disruption policies, as the Machine Config Daemon decides it
//     (openshift/machine-config-operator pkg/daemon/update.go,
//     calculatePostConfigChangeNodeDisruptionAction and
//     calculatePostConfigChangeNodeDisruptionActionFromMCDiffs);
//   - whether the nodes are drained (pkg/daemon/drain.go: only for Reboot
//     and Drain, and never on a single-node cluster,
//     docs/SingleNodeOpenShift.md);
//   - what the drain does to each VM: KubeVirt's eviction webhook decides
//     from the VM's eviction strategy and its LiveMigratable condition
//     (kubevirt/kubevirt
//     pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go,
//     pkg/util/migrations VMIEvictionStrategy).
//
// The plan engine reads the cluster once per plan and asks this package;
// the controller asks it again just before a write. The facts it follows
// are summarised in ../shared/crds/README.md ("What a node drain does to
// the VMs on it", "Which changes reboot a node") and docs/disruption.md.
package disruption
