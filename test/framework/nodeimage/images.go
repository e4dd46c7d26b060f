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

package nodeimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/pelletier/go-toml/v2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
)

// ControlPlane are the binaries of the OCI images kubeadm runs a control plane from as static
// pods. Nothing can be pulled here, so the image carries them, built by the suite, under the
// exact references `kubeadm config images list` gives for the version, imported into its
// containerd (namespace k8s.io) when the image is built.
type ControlPlane struct {
	// KubeBinDir has kube-apiserver, kube-controller-manager and kube-scheduler at the version
	// (hack/kube-binaries.sh); kube-proxy too when the cluster runs it.
	KubeBinDir string
	// EtcdBin is etcd at the version kubeadm's etcd image tag names (hack/etcd-binary.sh).
	EtcdBin string
	// PauseBin is the pod sandbox's process (hack/pause).
	PauseBin string
}

// imageSpec is one image: where its one binary comes from and where it goes.
type imageSpec struct {
	ref    name.Tag
	binary string // on the host
	target string // in the image
}

// controlPlaneImages resolves kubeadm's image list for version into images of the binaries; an
// image whose binary is not there (kube-proxy, coredns: addons the suite's clusters skip) is left
// out, and kubeadm's preflight pulls only what the phases it runs need.
func controlPlaneImages(ctx context.Context, kubeadm, version string, cp ControlPlane) ([]imageSpec, error) {
	out, err := exec.CommandContext(ctx, kubeadm, "config", "images", "list", "--kubernetes-version", version).Output()
	if err != nil {
		return nil, fmt.Errorf("kubeadm config images list: %w", err)
	}
	var specs []imageSpec
	for _, line := range strings.Fields(string(out)) {
		ref, err := name.NewTag(line, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("kubeadm lists %q: %w", line, err)
		}
		component := path.Base(ref.RepositoryStr())
		var spec imageSpec
		switch component {
		case "etcd":
			spec = imageSpec{ref: ref, binary: cp.EtcdBin, target: "/usr/local/bin/etcd"}
		case "pause":
			spec = imageSpec{ref: ref, binary: cp.PauseBin, target: "/pause"}
		default:
			spec = imageSpec{ref: ref, binary: filepath.Join(cp.KubeBinDir, component), target: "/usr/local/bin/" + component}
		}
		if _, err := os.Stat(spec.binary); err != nil {
			continue
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// sandboxImage is the pause image among specs: containerd's sandbox_image.
func sandboxImage(specs []imageSpec) string {
	for _, s := range specs {
		if s.target == "/pause" {
			return s.ref.Name()
		}
	}
	return ""
}

// image is a one-layer image: the binary at its target, on PATH, as the entrypoint.
func (s imageSpec) image() (v1.Image, error) {
	img, err := ociimage.Image([]ociimage.File{{Path: s.target, Mode: 0o755, Source: s.binary}}, ociimage.Config{
		Platform:   v1.Platform{OS: "linux", Architecture: "amd64"},
		Entrypoint: []string{s.target},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
	})
	if err != nil {
		return nil, fmt.Errorf("the image %s: %w", s.ref, err)
	}
	return img, nil
}

// writeArchive writes the images into one docker-format archive (what `ctr images import`
// reads).
func writeArchive(specs []imageSpec, archive string) error {
	images := map[name.Reference]v1.Image{}
	for _, s := range specs {
		img, err := s.image()
		if err != nil {
			return err
		}
		images[s.ref] = img
	}
	return ociimage.WriteDockerArchive(archive, images)
}

// containerdConfig is containerd 1.6's configuration (version 2) where it differs from the
// defaults: the pod sandbox is the image the node has (the default names a pause tag kubeadm
// does not list); runc uses the systemd cgroup driver, as the kubelet kubeadm configures does;
// and no container's oom_score_adj goes below containerd's own. The last is this machine's: its
// capability bounding set has no CAP_SYS_RESOURCE (not even for root on the host), so nobody
// may lower an oom_score_adj, and runc fails every pod sandbox (the CRI gives them -998) with
// "failed to update /proc/self/oom_score_adj: Permission denied". containerd's option for
// unprivileged hosts clamps the value instead.
type containerdConfig struct {
	Version int               `toml:"version"`
	Plugins containerdPlugins `toml:"plugins"`
}

type containerdPlugins struct {
	CRI criPlugin `toml:"io.containerd.grpc.v1.cri"`
}

type criPlugin struct {
	SandboxImage        string        `toml:"sandbox_image"`
	RestrictOOMScoreAdj bool          `toml:"restrict_oom_score_adj"`
	Containerd          criContainerd `toml:"containerd"`
}

type criContainerd struct {
	Runtimes map[string]criRuntime `toml:"runtimes"`
}

type criRuntime struct {
	RuntimeType string            `toml:"runtime_type"`
	Options     criRuntimeOptions `toml:"options"`
}

type criRuntimeOptions struct {
	SystemdCgroup bool `toml:"SystemdCgroup"`
}

func containerdConfigFile(sandbox string) (File, error) {
	data, err := toml.Marshal(containerdConfig{
		Version: 2,
		Plugins: containerdPlugins{CRI: criPlugin{
			SandboxImage:        sandbox,
			RestrictOOMScoreAdj: true,
			Containerd: criContainerd{Runtimes: map[string]criRuntime{
				"runc": {RuntimeType: "io.containerd.runc.v2", Options: criRuntimeOptions{SystemdCgroup: true}},
			}},
		}},
	})
	if err != nil {
		return File{}, err
	}
	return File{Path: "/etc/containerd/config.toml", Mode: 0o644, Data: data}, nil
}

// SandboxImage is the reference of the pod sandbox's image every node image carries (kubeadm's
// pause for version, as `kubeadm config images list` names it): a Pod of the suite that must
// run on a node without pulling anything runs it.
func SandboxImage(ctx context.Context, kubeadm, version string) (string, error) {
	out, err := exec.CommandContext(ctx, kubeadm, "config", "images", "list", "--kubernetes-version", version).Output()
	if err != nil {
		return "", fmt.Errorf("kubeadm config images list: %w", err)
	}
	for _, line := range strings.Fields(string(out)) {
		if ref, err := name.NewTag(line, name.StrictValidation); err == nil && path.Base(ref.RepositoryStr()) == "pause" {
			return ref.Name(), nil
		}
	}
	return "", fmt.Errorf("kubeadm %s lists no pause image", version)
}
