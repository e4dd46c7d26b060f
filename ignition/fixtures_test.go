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

package ignition_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types/upstream"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// Fixed credentials: the renderer is pure, so these make the output reproducible byte for byte.
const (
	testToken    = "abcdef.0123456789abcdef"
	testEndpoint = "10.0.0.1:6443"
	testCAHash   = "sha256:2b1f1d4e3d9a4c4a3f8e0f1c2d3b4a59687766554433221100ffeeddccbbaa99"
)

// joinInput is a worker join the way the reconciler builds it: discovery filled in.
func joinInput(variant cabpiv1.Variant, kubernetesVersion string) ignition.Input {
	return ignition.Input{
		Variant:           variant,
		Role:              ignition.RoleWorkerJoin,
		KubernetesVersion: kubernetesVersion,
		KubernetesDigests: testDigests(),
		JoinConfiguration: &kubeadmv1.JoinConfiguration{
			NodeRegistration: kubeadmv1.NodeRegistrationOptions{
				KubeletExtraArgs: []kubeadmv1.Arg{{Name: "node-labels", Value: ptr.To("pool=default")}},
			},
			Discovery: kubeadmv1.Discovery{BootstrapToken: kubeadmv1.BootstrapTokenDiscovery{
				Token:             testToken,
				APIServerEndpoint: testEndpoint,
				CACertHashes:      []string{testCAHash},
			}},
		},
	}
}

// controlPlaneJoinInput is a control-plane join with the shared certificates.
func controlPlaneJoinInput(variant cabpiv1.Variant, kubernetesVersion string) ignition.Input {
	in := joinInput(variant, kubernetesVersion)
	in.Role = ignition.RoleControlPlaneJoin
	in.JoinConfiguration.ControlPlane = &kubeadmv1.JoinControlPlane{
		LocalAPIEndpoint: kubeadmv1.APIEndpoint{AdvertiseAddress: "10.0.0.2", BindPort: 6443},
	}
	in.Certificates = testCertificates()
	return in
}

// initInput is a kubeadm init with the cluster's defaults filled in, as the reconciler does.
func initInput(variant cabpiv1.Variant, kubernetesVersion string) ignition.Input {
	return ignition.Input{
		Variant:           variant,
		Role:              ignition.RoleInit,
		KubernetesVersion: kubernetesVersion,
		KubernetesDigests: testDigests(),
		ClusterConfiguration: &kubeadmv1.ClusterConfiguration{
			ControlPlaneEndpoint: testEndpoint,
			APIServer:            kubeadmv1.APIServer{CertSANs: []string{"api.example.com"}},
		},
		InitConfiguration: &kubeadmv1.InitConfiguration{
			NodeRegistration: kubeadmv1.NodeRegistrationOptions{
				KubeletExtraArgs: []kubeadmv1.Arg{{Name: "cloud-provider", Value: ptr.To("external")}},
			},
		},
		ClusterData: &upstream.AdditionalData{
			ClusterName:       ptr.To("demo"),
			KubernetesVersion: ptr.To(kubernetesVersion),
			DNSDomain:         ptr.To("cluster.local"),
			PodSubnet:         ptr.To("192.168.0.0/16"),
			ServiceSubnet:     ptr.To("10.96.0.0/12"),
		},
		Certificates: testCertificates(),
	}
}

// testCertificates stand in for the cluster certificates (content is not checked by Ignition).
func testCertificates() []ignition.File {
	var files []ignition.File
	for _, name := range []string{"ca", "sa", "front-proxy-ca", "etcd/ca"} {
		certName, keyName := name+".crt", name+".key"
		if name == "sa" {
			certName, keyName = "sa.pub", "sa.key"
		}
		files = append(files,
			ignition.File{Path: "/etc/kubernetes/pki/" + certName, Content: []byte("-----BEGIN CERTIFICATE-----\n" + name + "\n-----END CERTIFICATE-----\n"), Mode: 0o644},
			ignition.File{Path: "/etc/kubernetes/pki/" + keyName, Content: []byte("-----BEGIN PRIVATE KEY-----\n" + name + "\n-----END PRIVATE KEY-----\n"), Mode: 0o600},
		)
	}
	return files
}

// Butane snippets of each variant: a user, a file, a unit and a directory.
const flatcarSnippet = `variant: flatcar
version: 1.0.0
passwd:
  users:
    - name: core
      ssh_authorized_keys:
        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample core@example
storage:
  files:
    - path: /etc/sysctl.d/90-kubernetes.conf
      mode: 0644
      contents:
        inline: |
          net.ipv4.ip_forward = 1
  directories:
    - path: /opt/cni/bin
      mode: 0755
systemd:
  units:
    - name: containerd.service
      enabled: true
`

const fcosSnippet = `variant: fcos
version: 1.5.0
passwd:
  users:
    - name: core
      ssh_authorized_keys:
        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample core@example
storage:
  files:
    - path: /etc/sysctl.d/90-kubernetes.conf
      contents:
        inline: |
          net.ipv4.ip_forward = 1
systemd:
  units:
    - name: crio.service
      enabled: true
`

// flatcarCLC is flatcarSnippet as a Container Linux Config, with what only that language has
// (networkd units, append: true) and the file defaults it leaves implicit.
const flatcarCLC = `passwd:
  users:
    - name: core
      ssh_authorized_keys:
        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample core@example
storage:
  files:
    - path: /etc/sysctl.d/90-kubernetes.conf
      filesystem: root
      mode: 0644
      contents:
        inline: |
          net.ipv4.ip_forward = 1
    - path: /etc/environment
      mode: 0644
      append: true
      contents:
        inline: |
          CABPI_SNIPPET=clc
  directories:
    - path: /opt/cni/bin
      mode: 0755
  links:
    - path: /etc/cabpi/sysctl.link
      target: /etc/sysctl.d/90-kubernetes.conf
systemd:
  units:
    - name: containerd.service
      enabled: true
      dropins:
        - name: 10-limits.conf
          contents: |
            [Service]
            LimitNOFILE=1048576
networkd:
  units:
    - name: 00-eth0.network
      contents: |
        [Match]
        Name=eth0
        [Network]
        DHCP=yes
`

// userTaint is a taint a user set on a worker.
var userTaint = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}

// butaneDropin is a flatcar snippet adding one drop-in to unit.
func butaneDropin(unit, contents string) string {
	return fmt.Sprintf("variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: %s\n      dropins:\n        - name: 10-x.conf\n          contents: %q\n", unit, contents)
}

// testDigests are the digests a user lists in spec.kubernetes.digestsFrom for the system
// extension images the tests render (cabpi's catalogue has the official release binaries
// only): made-up images' digests, one per version and architecture.
func testDigests() ignition.KubernetesDigests {
	user := nodelayout.Digests{}
	for _, v := range []string{"v1.33.2", "v1.33.10", "v1.34.0", "v1.34.4", "v1.35.0"} {
		for _, arch := range []cabpiv1.Architecture{cabpiv1.ArchitectureAMD64, cabpiv1.ArchitectureARM64} {
			name := ignition.SysextImageName(v, arch)
			sum := sha256.Sum256([]byte("test image " + name))
			user[name] = hex.EncodeToString(sum[:])
		}
	}
	return ignition.KubernetesDigests{User: user}
}
