// Command cabpi is the Cluster API bootstrap provider for Ignition. Without a subcommand it runs
// the manager; `cabpi render` previews the Ignition of a config offline.
package main

import (
	"fmt"
	"os"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/manager"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/rendercmd"
)

func main() {
	args := os.Args[1:]
	var err error
	if len(args) > 0 && args[0] == "render" {
		err = rendercmd.Main(args[1:], os.Stdin, os.Stdout, os.Stderr)
	} else {
		err = manager.Main(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
