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

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// confirm checks that the node runs u: kubeadm and the kubelet (and kubectl, when asked for)
// are its version, and a sysext node's link points at its image.
func (n *Node) confirm(ctx context.Context, u Update) error {
	if u.Source() == cabpiv1.KubernetesSourceSysext {
		l, err := nodelayout.SysextFor(u.Kubernetes, u.Version)
		if err != nil {
			return err
		}
		if target, err := n.disk.readLink(nodelayout.SysextLink); err != nil || target != l.ImagePath {
			return fmt.Errorf("%s does not point at %s", nodelayout.SysextLink, l.ImagePath)
		}
	}
	kubeadm, err := n.host.Run(ctx, "kubeadm", "version", "-o", "short")
	if err != nil {
		return err
	}
	kubelet, err := n.host.Run(ctx, "kubelet", "--version")
	if err != nil {
		return err
	}
	if err := nodelayout.CheckVersions(kubeadm, kubelet, u.Version); err != nil {
		return err
	}
	if u.Source() == cabpiv1.KubernetesSourceBinaries && u.Kubernetes.Binaries != nil && u.Kubernetes.Binaries.Kubectl {
		out, err := n.host.Run(ctx, "kubectl", "version", "--client")
		if err != nil {
			return err
		}
		if v := nodelayout.KubectlVersion(out); v != u.Version {
			return fmt.Errorf("kubectl is %s, not %s", v, u.Version)
		}
	}
	return nil
}
