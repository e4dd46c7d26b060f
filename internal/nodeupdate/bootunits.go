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

package nodeupdate

import (
	"io"
	"path"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// wantsDir is where the boot units are enabled.
var wantsDir = path.Join(nodelayout.SystemdUnitDir, "multi-user.target.wants")

// bootUnits are the units that finish an update a reboot (a power cut, a shutdown that paused
// it) interrupted, each started only while the journal is there: ResumeUnit before the kubelet
// (so that the kubelet never starts on half of each version) goes on with, or rolls back, the
// file steps and kubeadm; FinishUnit after it restarts the kubelet, waits for its health,
// checks the version and writes the result.
func (n *Node) bootUnits() []bootUnit {
	condition := unit.NewUnitOption("Unit", "ConditionPathExists", journalPath)
	return []bootUnit{
		{ResumeUnit, []*unit.UnitOption{
			unit.NewUnitOption("Unit", "Description", "cabpi: an interrupted in-place Kubernetes update, before the kubelet"),
			condition,
			unit.NewUnitOption("Unit", "Wants", "network-online.target"),
			unit.NewUnitOption("Unit", "After", "network-online.target systemd-sysext.service"),
			unit.NewUnitOption("Unit", "Before", "kubelet.service"),
			unit.NewUnitOption("Service", "Type", "oneshot"),
			unit.NewUnitOption("Service", "ExecStart", n.program+" update-node resume"),
			unit.NewUnitOption("Service", "KillMode", "mixed"),
			unit.NewUnitOption("Service", "TimeoutStartSec", "10min"),
			unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
		}},
		{FinishUnit, []*unit.UnitOption{
			unit.NewUnitOption("Unit", "Description", "cabpi: an interrupted in-place Kubernetes update, after the kubelet"),
			condition,
			unit.NewUnitOption("Unit", "After", "kubelet.service "+ResumeUnit),
			unit.NewUnitOption("Service", "Type", "oneshot"),
			unit.NewUnitOption("Service", "ExecStart", n.program+" update-node finish"),
			unit.NewUnitOption("Service", "KillMode", "mixed"),
			unit.NewUnitOption("Service", "TimeoutStartSec", "10min"),
			unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
		}},
	}
}

// bootUnit is a unit file's name and options.
type bootUnit struct {
	name    string
	options []*unit.UnitOption
}

// installBootUnits writes and enables the boot units (for the next boot: nothing reloads
// systemd for them now).
func (n *Node) installBootUnits() error {
	for _, u := range n.bootUnits() {
		name := u.name
		data, err := io.ReadAll(unit.Serialize(u.options))
		if err != nil {
			return err
		}
		file := path.Join(nodelayout.SystemdUnitDir, name)
		if err := n.disk.writeFile(file, data, 0o644); err != nil {
			return err
		}
		if err := n.disk.link(file, path.Join(wantsDir, name)); err != nil {
			return err
		}
	}
	return nil
}

// removeBootUnits removes them, links first.
func (n *Node) removeBootUnits() error {
	for _, name := range []string{ResumeUnit, FinishUnit} {
		if err := n.disk.remove(path.Join(wantsDir, name)); err != nil {
			return err
		}
		if err := n.disk.remove(path.Join(nodelayout.SystemdUnitDir, name)); err != nil {
			return err
		}
	}
	return nil
}
