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

package ignition

import (
	"fmt"
	"io"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// kubeadmUnitExecStart runs the bootstrap script through bash. The script is not executed
// directly: Flatcar 4628 and later mount /etc noexec, where `ExecStart=/etc/kubeadm.sh` fails
// with "Permission denied" and kubeadm never runs (Cluster API moved CABPK the same way).
const kubeadmUnitExecStart = "/bin/bash " + KubeadmScriptPath

// kubeadmUnit is kubeadm.service: a oneshot that runs /etc/kubeadm.sh once, on the first boot
// that finds /etc/kubeadm.yml (the script removes it after kubeadm succeeded). With a node name
// from metadata it also waits for the variant's metadata service and reads its attributes.
//
// The unit is built from typed options and serialized by go-systemd, the library Ignition itself
// uses to read units; drop-ins a user adds are checked with the same parser (dropin.go).
// With the Kubernetes system extension it also waits for systemd-sysext.service, which merges it.
// It is ordered before the units in before (the variant's update agents, attempt.go): they wait
// for the bootstrap to end.
func kubeadmUnit(md *metadataSource, after, before []string) string {
	opts := []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "Bootstrap the node with kubeadm (Cluster API, cabpi)"),
		unit.NewUnitOption("Unit", "Wants", "network-online.target"),
		unit.NewUnitOption("Unit", "After", "network-online.target containerd.service"),
	}
	for _, u := range after {
		opts = append(opts, unit.NewUnitOption("Unit", "Wants", u), unit.NewUnitOption("Unit", "After", u))
	}
	if md != nil {
		opts = append(opts,
			unit.NewUnitOption("Unit", "Requires", md.service),
			unit.NewUnitOption("Unit", "After", md.service),
		)
	}
	if len(before) > 0 {
		opts = append(opts, unit.NewUnitOption("Unit", "Before", strings.Join(before, " ")))
	}
	opts = append(opts,
		unit.NewUnitOption("Unit", "ConditionPathExists", KubeadmConfigPath),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
	)
	if md != nil {
		// Without "-": a missing attributes file fails the unit instead of naming the node wrong.
		opts = append(opts, unit.NewUnitOption("Service", "EnvironmentFile", md.environmentFile))
	}
	opts = append(opts,
		unit.NewUnitOption("Service", "ExecStart", kubeadmUnitExecStart),
		unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
	)
	return serializeUnit(opts)
}

// serializeUnit writes unit options as a unit file: go-systemd serializes into memory, which does
// not fail.
func serializeUnit(opts []*unit.UnitOption) string {
	data, err := io.ReadAll(unit.Serialize(opts))
	if err != nil {
		panic(fmt.Sprintf("serializing a unit from memory: %v", err))
	}
	return string(data)
}
