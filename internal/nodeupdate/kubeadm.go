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
	"path"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// kubeadmUpgrade runs `kubeadm upgrade node` (workers: the kubelet's client certificate
// rotates by itself, kubeadm renews nothing) and syncs what it rewrote, which kubeadm does not:
// the kubelet's configuration and flags.
func (n *Node) kubeadmUpgrade(ctx context.Context) error {
	if _, err := n.host.Run(ctx, "kubeadm", "upgrade", "node", "--certificate-renewal=false"); err != nil {
		return err
	}
	for _, p := range []string{nodelayout.KubeletConfig, nodelayout.KubeletFlags} {
		if n.disk.exists(p) {
			if err := n.disk.sync(p); err != nil {
				return err
			}
		}
	}
	return n.disk.sync(path.Dir(nodelayout.KubeletConfig))
}
