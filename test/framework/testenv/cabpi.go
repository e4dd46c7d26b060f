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

package testenv

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
)

// A test runs cabpi's reconciler through internal/setup, the wiring of the binary, in one of two
// ways: SetupCabpi registers it on the Environment's Manager, next to Cluster API's controllers
// and sharing their ClusterCache; NewCabpiManager makes a manager of its own, as a separate
// process would run (a test that kills it, a benchmark). Tests whose subject is the process
// itself run setup.Run or the built binary instead.

// CabpiOptions are the manager flags' defaults (setup.DefaultOptions) without the webhook
// server, the metrics endpoint and the health probes: what a cabpi manager next to the harness
// starts from. A test sets what it is about (a concurrency, a token TTL, a metrics address).
func CabpiOptions() setup.Options {
	o := setup.DefaultOptions()
	o.WebhookPort = 0
	o.Diagnostics.DiagnosticsAddress = "0"
	o.HealthProbeAddress = "0"
	return o
}

// SetupCabpi registers cabpi's IgnitionConfig controller on the Environment's Manager as the
// binary registers it (setup.SetupControllers), with the Environment's ClusterCache, which
// Cluster API's controllers share; with Options.Webhooks, cabpi's admission webhooks too, on the
// server envtest configured. Call it before StartManager. opts.WebhookPort is the
// Environment's: what the caller set is replaced.
func (e *Environment) SetupCabpi(opts setup.Options) error {
	if e.ClusterCache == nil {
		return errors.New("testenv: SetupCabpi needs the ClusterCache (Options.ClusterCache or a Cluster API controller)")
	}
	opts.WebhookPort = e.webhookPort()
	if err := setup.SetupControllers(e.ctx, e.Manager, e.ClusterCache, opts); err != nil {
		return fmt.Errorf("testenv: setting up cabpi: %w", err)
	}
	return nil
}

// SetupCabpiWebhooks registers cabpi's admission webhooks alone (setup.SetupWebhooks), for
// suites that look at admission without a controller. Needs Options.Webhooks; call it before
// StartManager.
func (e *Environment) SetupCabpiWebhooks() error {
	if !e.opts.Webhooks {
		return errors.New("testenv: SetupCabpiWebhooks needs Options.Webhooks")
	}
	if err := setup.SetupWebhooks(e.Manager, setup.Options{WebhookPort: e.webhookPort()}); err != nil {
		return fmt.Errorf("testenv: setting up cabpi's webhooks: %w", err)
	}
	return nil
}

// webhookPort is the port of the webhook server envtest configured, 0 without Options.Webhooks
// (setup registers no webhook then).
func (e *Environment) webhookPort() int {
	if !e.opts.Webhooks {
		return 0
	}
	return e.TestEnv.WebhookInstallOptions.LocalServingPort
}

// NewCabpiManager creates a cabpi manager of its own against cfg (an Environment's Config, or a
// copy with another identity or rate limit), wired as the binary wires it: setup.NewManager and
// setup.Setup (its own ClusterCache). Controller name validation is off, so that a process can
// run several; adjust changes the options further (a client that fails on purpose). The caller
// starts it.
func NewCabpiManager(ctx context.Context, cfg *rest.Config, opts setup.Options, adjust ...func(*ctrl.Options)) (ctrl.Manager, error) {
	skipNameValidation := func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) }
	mgr, err := setup.NewManager(cfg, opts, append([]func(*ctrl.Options){skipNameValidation}, adjust...)...)
	if err != nil {
		return nil, err
	}
	if err := setup.Setup(ctx, mgr, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}
