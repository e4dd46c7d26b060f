// Command cabpi is the Cluster API bootstrap provider for Ignition. Without a subcommand it runs
// the manager; `cabpi render` previews the Ignition of a config offline; `cabpi convert` turns
// CABPK's KubeadmConfig(Template)s into IgnitionConfig(Template)s; `cabpi update-node` moves the
// node it runs on to another Kubernetes version in place (the in-place update's Job). Each lives
// in cmd/.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/convert"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/manager"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/render"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/updatenode"
)

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "render":
		err = render.Main(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "convert":
		err = convert.Main(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "update-node":
		err = updatenode.Main(args[1:], os.Stdout, os.Stderr)
	default:
		err = manager.Main(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		var exit interface{ ExitCode() int }
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		os.Exit(1)
	}
}
