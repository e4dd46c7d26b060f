package setup

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/webhooks"
)

// SetupWebhooks registers the admission webhooks when the webhook server is enabled
// (--webhook-port other than 0; the server's port and certificate directory are set in
// ManagerOptions). SetupControllers calls it; suites that look at admission alone call it
// without the controller.
func SetupWebhooks(mgr ctrl.Manager, opts Options) error {
	if opts.WebhookPort == 0 {
		return nil
	}
	if err := webhooks.SetupIgnitionConfigWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the IgnitionConfig webhooks: %w", err)
	}
	if err := webhooks.SetupIgnitionConfigTemplateWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the IgnitionConfigTemplate webhook: %w", err)
	}
	return nil
}
