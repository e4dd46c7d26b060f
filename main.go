/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
