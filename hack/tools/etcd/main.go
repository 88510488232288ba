// Command etcd is the etcd server built from Go modules, for the local
// control plane and the e2e suite (prebuilt binaries cannot be downloaded).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
