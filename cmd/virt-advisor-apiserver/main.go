// Command virt-advisor-apiserver serves advisor.kubevirt.io as an aggregated API.
package main

import (
	"os"
	// MaintenanceWindows name IANA time zones: the binary carries the
	// zone database, so images without /usr/share/zoneinfo load them.
	_ "time/tzdata"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kubevirt/virt-advisor/cmd/virt-advisor-apiserver/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
