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

// Package metrics_test scrapes the manager's metrics endpoint as deployed: the manager is built
// by setup.NewManager and setup.Setup with secure diagnostics (HTTPS, every scrape's token
// reviewed by the envtest API server and its right to get /metrics asked of it), a scraper
// authenticates with a ServiceAccount token from the TokenRequest API and is authorized by
// config/rbac's metrics-reader ClusterRole. A worker Machine bootstraps (Cluster API's Machine
// controller), and cabpi's own metrics (internal/metrics) count what the controller did.
package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "metrics", Eventually: eventually, Tick: tick}
	// metricsAddress is where the cabpi manager serves its metrics (host:port).
	metricsAddress string
)

// TestMain runs the Environment with Cluster API's Machine controller in its Manager; cabpi's is
// a manager of its own, as in production, started once the Environment's runs.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{MachineController: true},
		Keep:    []**testenv.Environment{&env, &fx.Env},
		Started: func(e *testenv.Environment) (func() error, error) {
			if err := installMetricsReader(e.Context()); err != nil {
				return nil, err
			}
			stop, err := startCabpi(e.Context())
			if err != nil {
				return nil, err
			}
			return func() error {
				if err := stop(); err != nil {
					return fmt.Errorf("cabpi manager: %w", err)
				}
				return nil
			}, nil
		},
	}))
}

// installMetricsReader creates config/rbac's metrics-reader ClusterRole, as shipped.
func installMetricsReader(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		return fmt.Errorf("config/rbac/metrics_reader_role.yaml: %w", err)
	}
	return env.Client.Create(ctx, role)
}

// startCabpi runs the cabpi manager (setup.Run, the production entry point) with the flags'
// defaults but a free local port for the metrics and no webhooks or health probes, and returns
// how to stop it.
func startCabpi(ctx context.Context) (stop func() error, err error) {
	if metricsAddress, err = testenv.FreeLocalAddress(); err != nil {
		return nil, err
	}
	opts := testenv.CabpiOptions()
	opts.Diagnostics.DiagnosticsAddress = metricsAddress // secure, as the flags default to
	opts.Concurrency = 5
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- setup.Run(ctx, env.Config, opts) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("did not stop within 1m")
		}
	}, nil
}
