package setup

import (
	"context"
	"fmt"
	"os"

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
	image, err := updateImage(ctx, mgr.GetAPIReader(), opts)
	if err != nil {
		return err
	}
	tlsOpts, _, err := capiflags.GetManagerOptions(opts.Diagnostics)
	if err != nil {
		return fmt.Errorf("diagnostics and TLS flags: %w", err)
	}
	h := &inplace.Handlers{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		ClusterCache: cc,
		Recorder:     mgr.GetEventRecorder("cabpi-update-extension"),
		Image:        image,
	}
	return inplace.AddToManager(mgr, h, inplace.ServerOptions{Host: opts.UpdateExtensionHost, Port: opts.UpdateExtensionPort,
		CertDir: opts.WebhookCertDir, ClientCAName: opts.UpdateExtensionClientCA, TLSOpts: tlsOpts})
}

// updateImage is --update-image, else the image of the manager's own container: the update
// Jobs run the same build (cabpi update-node) as the manager that creates them, whatever
// clusterctl's image overrides made of it.
func updateImage(ctx context.Context, r client.Reader, opts Options) (string, error) {
	if opts.UpdateImage != "" {
		return opts.UpdateImage, nil
	}
	namespace, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if namespace == "" || name == "" {
		return "", fmt.Errorf("--update-extension-port is set without --update-image, and POD_NAMESPACE and POD_NAME do not name the manager's Pod to read its image from")
	}
	pod := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return "", fmt.Errorf("reading the manager's Pod %s/%s for its image (or set --update-image): %w", namespace, name, err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == managerContainer {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("the manager's Pod %s/%s has no container %q to take the update image from (set --update-image)", namespace, name, managerContainer)
}
