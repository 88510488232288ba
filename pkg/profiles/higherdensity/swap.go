package higherdensity

// The swap MachineConfig content. It comes from the earlier operator's
// virt-higher-density profile: seed 000_5fcf562eb1e64ac8 (script, kubelet
// config, units) and the desiredState in seed 004_89f53f28fd2ac9fe (exact
// base64 bytes, modes, overwrite, Ignition version). Keep it byte for byte:
// a change here changes the rendered MachineConfig and reboots every worker.

const (
	// swapMachineConfigName is the MachineConfig this profile creates.
	swapMachineConfigName = "90-worker-kubelet-swap"

	// ignitionVersion is the Ignition spec version of spec.config.
	ignitionVersion = "3.2.0"

	// dataURLPrefix prefixes the base64 payload of an Ignition file source.
	dataURLPrefix = "data:text/plain;charset=utf-8;base64,"

	findSwapPartitionPath = "/etc/find-swap-partition"
	findSwapPartitionMode = 493 // 0755

	kubeletSwapConfPath = "/etc/openshift/kubelet.conf.d/90-swap.conf"
	kubeletSwapConfMode = 420 // 0644

	swapProvisionUnitName = "swap-provision.service"
	cgroupSliceUnitName   = "cgroup-system-slice-config.service"
)

// findSwapPartitionScript enables the swap partition labelled CNV_SWAP.
// It deliberately has NO trailing newline: its base64 must equal the one in
// seed 004.
const findSwapPartitionScript = `#!/usr/bin/env bash
set -euo pipefail

PARTLABEL="CNV_SWAP"
DEVICE="/dev/disk/by-partlabel/${PARTLABEL}"

if [[ ! -e "$DEVICE" ]]; then
  echo "Swap partition with PARTLABEL=${PARTLABEL} not found" >&2
  exit 1
fi

if swapon --show=NAME | grep -q "$DEVICE"; then
  echo "Swap already enabled on $DEVICE" >&2
  exit 1
fi

echo "Enabling swap on $DEVICE" >&2
swapon "$DEVICE"
touch /var/tmp/swapfile`

// kubeletSwapConf is the kubelet drop-in enabling LimitedSwap. failSwapOn:
// false is needed too: the provisioning unit turns swap on before the
// kubelet starts, and a kubelet with the default failSwapOn refuses to run
// on a node with swap (seed 002, step 3).
const kubeletSwapConf = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failSwapOn: false
memorySwap:
  swapBehavior: LimitedSwap
`

// swapProvisionUnit runs the script once per node (after the first boot, and
// only until the sentinel /var/tmp/swapfile exists), before the kubelet.
const swapProvisionUnit = `[Unit]
Description=Provision and enable swap
ConditionFirstBoot=no
ConditionPathExists=!/var/tmp/swapfile

[Service]
Type=oneshot
ExecStart=/etc/find-swap-partition

[Install]
WantedBy=multi-user.target
RequiredBy=kubelet-dependencies.target
`

// cgroupSliceUnit keeps system.slice processes out of swap.
const cgroupSliceUnit = `[Unit]
Description=Restrict swap for system slice
ConditionFirstBoot=no

[Service]
Type=oneshot
ExecStart=/bin/sh -c "sudo systemctl set-property --runtime system.slice MemorySwapMax=0 IODeviceLatencyTargetSec=\"/ 50ms\""

[Install]
RequiredBy=kubelet-dependencies.target
`
