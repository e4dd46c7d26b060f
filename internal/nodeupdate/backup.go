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
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// backup keeps what the swap and kubeadm change (the sysext link or the binaries, sysupdate's
// transfer files, the kubelet's files kubeadm rewrites), installs the boot units that finish
// an interrupted update, and journals the backup: from then on a run that stops is gone on with,
// or rolled back, from the journal.
func (n *Node) backup(ctx context.Context, j *journal) error {
	if err := n.disk.remove(backupDir); err != nil {
		return err
	}
	if err := n.disk.mkdirAll(backupDir, 0o700); err != nil {
		return err
	}
	info := &j.Backup
	switch j.Update.Source() {
	case cabpiv1.KubernetesSourceSysext:
		target, err := n.disk.readLink(nodelayout.SysextLink)
		if err != nil {
			return fmt.Errorf("%s is not a link to a system extension image: %w", nodelayout.SysextLink, err)
		}
		info.Link = target
		transfers, err := n.transfers()
		if err != nil {
			return err
		}
		for _, t := range transfers {
			if err := n.disk.copyFile(path.Join(nodelayout.SysupdateConfDir, t), path.Join(backupDir, "sysupdate", t), 0o644); err != nil {
				return err
			}
		}
		info.Transfers = transfers
	case cabpiv1.KubernetesSourceBinaries:
		info.Names = nodelayout.BinariesFor(j.Update.Kubernetes, j.Update.Version).Names
		for _, name := range info.Names {
			bin := path.Join(nodelayout.BinDir, name)
			if !n.disk.exists(bin) {
				continue
			}
			if err := n.disk.copyFile(bin, path.Join(backupDir, "bin", name), 0o755); err != nil {
				return err
			}
			info.Binaries = append(info.Binaries, name)
		}
	}
	if n.disk.exists(nodelayout.KubeletConfig) {
		if err := n.disk.copyFile(nodelayout.KubeletConfig, path.Join(backupDir, "kubelet-config"), 0o644); err != nil {
			return err
		}
		info.KubeletConfig = true
	}
	if n.disk.exists(nodelayout.KubeletFlags) {
		if err := n.disk.copyFile(nodelayout.KubeletFlags, path.Join(backupDir, "kubelet-flags"), 0o644); err != nil {
			return err
		}
		info.KubeletFlags = true
	}
	if err := n.installBootUnits(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return n.record(j, stepBackup, true)
}

// transfers are the names of the Kubernetes component's systemd-sysupdate transfer files
// (kubernetes-vMAJOR.MINOR.conf) there are.
func (n *Node) transfers() ([]string, error) {
	entries, err := os.ReadDir(n.disk.path(nodelayout.SysupdateConfDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", nodelayout.SysupdateConfDir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "kubernetes-") && strings.HasSuffix(e.Name(), ".conf") && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}
