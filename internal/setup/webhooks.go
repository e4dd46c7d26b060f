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
