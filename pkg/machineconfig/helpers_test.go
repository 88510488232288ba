package machineconfig

const testManager = "virt-advisor"
