// Package machineconfig is everything virt-advisor knows about
// MachineConfigs, KubeletConfigs and MachineConfigPools that is not I/O:
// which pools select a MachineConfig or are selected by a KubeletConfig
// (rendered into a generated MachineConfig), which pools a change rolls (and so which nodes
// reboot), whether a pause is ours and when to write or unpause, and how
// far a pool has rolled a change out. The plan engine, the controller and
// the plugin all decide through it; they only read and write.
//
// The MachineConfig operator's behaviour it follows is summarised in
// docs/upstream-behaviour.md.
package machineconfig
