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

package setup

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capiflags "sigs.k8s.io/cluster-api/util/flags"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
)

// The manager reads its own Pod for its image (updateImage): config/rbac/pod_reader_role.yaml, a
// Role in its namespace (a marker would make role.yaml two objects).

// managerContainer is the manager's container in its Deployment (config/manager).
const managerContainer = "manager"

// SetupUpdateExtension serves the in-place update extension when --update-extension-port is
// set (docs/adr/035), with the webhook server's certificate and TLS settings.
func SetupUpdateExtension(ctx context.Context, mgr ctrl.Manager, cc clustercache.ClusterCache, opts Options) error {
	if opts.UpdateExtensionPort == 0 {
		return nil
	}
	if opts.UpdateImage == "" && (os.Getenv("POD_NAMESPACE") == "" || os.Getenv("POD_NAME") == "") {
		return fmt.Errorf("--update-extension-port is set without --update-image, and POD_NAMESPACE and POD_NAME do not name the manager's Pod to read its image from")
	}
	tlsOpts, _, err := capiflags.GetManagerOptions(opts.Diagnostics)
	if err != nil {
		return fmt.Errorf("diagnostics and TLS flags: %w", err)
	}
	h := &inplace.Handlers{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		ClusterCache:     cc,
		Recorder:         mgr.GetEventRecorder("cabpi-update-extension"),
		Image:            func(ctx context.Context) (string, error) { return updateImage(ctx, mgr.GetAPIReader(), opts) },
		ImagePullSecrets: opts.UpdateImagePullSecrets,
	}
	return inplace.AddToManager(mgr, h, inplace.ServerOptions{Host: opts.UpdateExtensionHost, Port: opts.UpdateExtensionPort,
		CertDir: opts.WebhookCertDir, ClientCAName: opts.UpdateExtensionClientCA, TLSOpts: tlsOpts})
}

// updateImage is --update-image, else the image of the manager's own container pinned to the
// digest its node pulled (pinnedImage): the update Jobs run the same build (cabpi update-node) as
// the manager that creates them, whatever clusterctl's image overrides made of it, and a tag
// pushed again since changes nothing. Read when an update starts, not once at start-up: the
// kubelet reports the digest only once the container runs.
func updateImage(ctx context.Context, r client.Reader, opts Options) (string, error) {
	if opts.UpdateImage != "" {
		return opts.UpdateImage, nil
	}
	namespace, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	pod := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return "", fmt.Errorf("reading the manager's Pod %s/%s for its image (or set --update-image): %w", namespace, name, err)
	}
	return pinnedImage(pod)
}

// pinnedImage is the image of the manager's container, by digest: its reference as the Pod names
// it, with the digest of the image the node runs (the container status' imageID,
// <repository>@sha256:..., docker's with a docker-pullable:// scheme). A reference that has a
// digest already is kept. An imageID that is not a digest of that repository (an image loaded
// into the node rather than pulled, or a runtime that reports the local image ID) gives no digest
// to pin, and the reference is used as the Pod names it; an error only when the Pod has no
// manager container.
func pinnedImage(pod *corev1.Pod) (string, error) {
	var image string
	for _, c := range pod.Spec.Containers {
		if c.Name == managerContainer {
			image = c.Image
		}
	}
	if image == "" {
		return "", fmt.Errorf("the manager's Pod %s/%s has no container %q to take the update image from (set --update-image)", pod.Namespace, pod.Name, managerContainer)
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("the manager's image %q: %w", image, err)
	}
	if _, byDigest := ref.(name.Digest); byDigest {
		return image, nil
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != managerContainer {
			continue
		}
		pulled, err := name.NewDigest(strings.TrimPrefix(s.ImageID, "docker-pullable://"))
		if err != nil || pulled.Context().Name() != ref.Context().Name() {
			return image, nil
		}
		return image + "@" + pulled.DigestStr(), nil
	}
	return image, nil
}
