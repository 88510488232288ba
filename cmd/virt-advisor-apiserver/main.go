// Command virt-advisor-apiserver serves advisor.kubevirt.io as an aggregated API.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/kubevirt/virt-advisor/cmd/virt-advisor-apiserver/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
