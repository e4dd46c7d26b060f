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
	"path"
	"slices"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// swap puts the new version in place: the sysext link at the new image (and sysupdate's
// transfer file for its minor and mirror, so that sysupdate keeps the node on it), or the staged
// binaries, checked again (a resumed run reads them after a reboot), each renamed over the old.
func (n *Node) swap(ctx context.Context, j *journal) error {
	u := j.Update
	if u.Source() == cabpiv1.KubernetesSourceSysext {
		l, err := nodelayout.SysextFor(u.Kubernetes, u.Version)
		if err != nil {
			return err
		}
		if !n.disk.exists(l.ImagePath) {
			return fmt.Errorf("%s is missing", l.ImagePath)
		}
		// Checked again: a resumed run reads it after a reboot.
		image := nodelayout.Download{Name: l.Image, Rel: l.Image}
		digest, err := u.pin(image)
		if err != nil {
			return err
		}
		if err := nodelayout.VerifyFile(n.disk.path(l.ImagePath), l.Image, digest); err != nil {
			return fmt.Errorf("the fetched %w", err)
		}
		if err := n.disk.link(l.ImagePath, nodelayout.SysextLink); err != nil {
			return err
		}
		if u.Kubernetes.Sysext != nil && u.Kubernetes.Sysext.Sysupdate {
			if err := n.swapTransfer(l); err != nil {
				return err
			}
		}
		if _, err := n.host.Run(ctx, "systemd-sysext", "refresh"); err != nil {
			return err
		}
		_, err = n.host.Run(ctx, "systemctl", "daemon-reload")
		return err
	}
	stage := path.Join(stageDir, u.Version)
	downloads := map[string]nodelayout.Download{}
	for _, d := range nodelayout.BinariesFor(u.Kubernetes, u.Version).Downloads() {
		downloads[d.Name] = d
	}
	for _, name := range j.Backup.Names {
		digest, err := u.pin(downloads[name])
		if err != nil {
			return err
		}
		if err := nodelayout.VerifyFile(n.disk.path(path.Join(stage, name)), name, digest); err != nil {
			return fmt.Errorf("the staged %w", err)
		}
	}
	for _, name := range j.Backup.Names {
		if err := n.disk.copyFile(path.Join(stage, name), path.Join(nodelayout.BinDir, name), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// swapTransfer makes the staged transfer file the Kubernetes component's only one.
func (n *Node) swapTransfer(l nodelayout.Sysext) error {
	if err := n.disk.copyFile(path.Join(stageDir, l.Transfer), l.TransferPath, 0o644); err != nil {
		return err
	}
	others, err := n.transfers()
	if err != nil {
		return err
	}
	for _, t := range others {
		if t != l.Transfer {
			if err := n.disk.remove(path.Join(nodelayout.SysupdateConfDir, t)); err != nil {
				return err
			}
		}
	}
	return nil
}

// restore puts back what the backup holds.
func (n *Node) restore(ctx context.Context, j *journal) error {
	info := j.Backup
	sysext := j.Update.Source() == cabpiv1.KubernetesSourceSysext
	if sysext {
		if err := n.disk.link(info.Link, nodelayout.SysextLink); err != nil {
			return err
		}
		current, err := n.transfers()
		if err != nil {
			return err
		}
		for _, t := range current {
			if err := n.disk.remove(path.Join(nodelayout.SysupdateConfDir, t)); err != nil {
				return err
			}
		}
		for _, t := range info.Transfers {
			if err := n.disk.copyFile(path.Join(backupDir, "sysupdate", t), path.Join(nodelayout.SysupdateConfDir, t), 0o644); err != nil {
				return err
			}
		}
	}
	for _, name := range info.Names {
		bin := path.Join(nodelayout.BinDir, name)
		if slices.Contains(info.Binaries, name) {
			if err := n.disk.copyFile(path.Join(backupDir, "bin", name), bin, 0o755); err != nil {
				return err
			}
		} else if err := n.disk.remove(bin); err != nil {
			return err
		}
	}
	if info.KubeletConfig {
		if err := n.disk.copyFile(path.Join(backupDir, "kubelet-config"), nodelayout.KubeletConfig, 0o644); err != nil {
			return err
		}
	}
	if info.KubeletFlags {
		if err := n.disk.copyFile(path.Join(backupDir, "kubelet-flags"), nodelayout.KubeletFlags, 0o644); err != nil {
			return err
		}
	}
	if sysext {
		if _, err := n.host.Run(ctx, "systemd-sysext", "refresh"); err != nil {
			return err
		}
	}
	_, err := n.host.Run(ctx, "systemctl", "daemon-reload")
	return err
}
