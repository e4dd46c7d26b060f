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
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	clustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	clusterclasscontroller "sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	machinecontroller "sigs.k8s.io/cluster-api/core/reconcilers/machine"
	machinedeploymentcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	machinehealthcheckcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	machinepoolcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinepool"
	machinesetcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	topologyclustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster"
	topologymachinedeploymentcontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/machinedeployment"
	topologymachinesetcontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/machineset"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/index"
)

// setupCAPI wires CAPI's indexes, ClusterCache and reconcilers the way CAPI's own suites do
// (core/reconcilers/*/suite_test.go). RuntimeClient is nil unless Options.InPlaceUpdates: it is
// only required with the RuntimeSDK and InPlaceUpdates feature gates (off by default).
func (e *Environment) setupCAPI(ctx context.Context, name string) error {
	mgr := e.Manager
	opts := e.opts
	ctrlOpts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}

	// Machine by node name / providerID (and MachinePool equivalents): the Machine controller
	// and Cluster controller list through them.
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("testenv: adding CAPI indexes: %w", err)
	}

	if opts.clusterCacheNeeded() {
		secretCachingClient, err := capisetup.CreateSecretCachingClient(mgr)
		if err != nil {
			return fmt.Errorf("testenv: creating secret caching client: %w", err)
		}
		cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: secretCachingClient,
			Cache:        capisetup.ClusterCacheCacheOptions(),
			Client:       capisetup.ClusterCacheClientOptions(name, 1000, 2000),
		}, controller.Options{MaxConcurrentReconciles: 10})
		if err != nil {
			return fmt.Errorf("testenv: setting up ClusterCache: %w", err)
		}
		// Test-only knob of the concrete type (not in the ClusterCache interface).
		if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
			s.SetConnectionCreationRetryInterval(opts.ClusterCacheConnectionRetryInterval)
		}
		e.ClusterCache = cc
	}
	if opts.InPlaceUpdates {
		if err := e.setupRuntimeSDK(ctx, ctrlOpts); err != nil {
			return err
		}
	}

	if opts.ClusterController {
		if err := (&clustercontroller.Reconciler{
			Client:                      mgr.GetClient(),
			APIReader:                   mgr.GetAPIReader(),
			ClusterCache:                e.ClusterCache,
			RemoteConnectionGracePeriod: 50 * time.Second,
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI Cluster controller: %w", err)
		}
	}
	if opts.MachineController {
		if err := (&machinecontroller.Reconciler{
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			ClusterCache:  e.ClusterCache,
			RuntimeClient: e.runtimeClient(),
			// Must be >= 2m (enforced by SetupWithManager).
			RemoteConditionsGracePeriod: 5 * time.Minute,
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI Machine controller: %w", err)
		}
	}
	if opts.MachineSetController {
		if err := (&machinesetcontroller.Reconciler{
			Client:       mgr.GetClient(),
			APIReader:    mgr.GetAPIReader(),
			ClusterCache: e.ClusterCache,
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI MachineSet controller: %w", err)
		}
	}
	if opts.MachineDeploymentController {
		// The MachineSet reconciler takes no RuntimeClient: the MachineDeployment one asks
		// CanUpdateMachineSet, the Machine one calls UpdateMachine.
		if err := (&machinedeploymentcontroller.Reconciler{
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			RuntimeClient: e.runtimeClient(),
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI MachineDeployment controller: %w", err)
		}
	}
	if opts.MachineHealthCheckController {
		if err := (&machinehealthcheckcontroller.Reconciler{
			Client:       mgr.GetClient(),
			ClusterCache: e.ClusterCache,
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI MachineHealthCheck controller: %w", err)
		}
	}
	if opts.TopologyControllers {
		if err := e.setupTopology(ctx, ctrlOpts); err != nil {
			return err
		}
	}
	if opts.MachinePoolController {
		if err := (&machinepoolcontroller.Reconciler{
			Client:       mgr.GetClient(),
			APIReader:    mgr.GetAPIReader(),
			ClusterCache: e.ClusterCache,
		}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
			return fmt.Errorf("testenv: setting up CAPI MachinePool controller: %w", err)
		}
	}
	return nil
}

// setupTopology turns the ClusterTopology feature gate on (process-wide, as the manager's flag
// does) and registers the ClusterClass and managed topology reconcilers. Their RuntimeClient is
// nil unless Options.InPlaceUpdates: it is only required with the RuntimeSDK feature gate (off
// by default).
func (e *Environment) setupTopology(ctx context.Context, ctrlOpts controller.Options) error {
	mgr := e.Manager
	if err := feature.MutableGates.Set(string(feature.ClusterTopology) + "=true"); err != nil {
		return fmt.Errorf("testenv: enabling the ClusterTopology feature gate: %w", err)
	}
	if err := (&clusterclasscontroller.Reconciler{Client: mgr.GetClient(), RuntimeClient: e.runtimeClient()}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
		return fmt.Errorf("testenv: setting up CAPI ClusterClass controller: %w", err)
	}
	if err := (&topologyclustercontroller.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		ClusterCache:  e.ClusterCache,
		RuntimeClient: e.runtimeClient(),
	}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
		return fmt.Errorf("testenv: setting up CAPI topology Cluster controller: %w", err)
	}
	if err := (&topologymachinedeploymentcontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
		return fmt.Errorf("testenv: setting up CAPI topology MachineDeployment controller: %w", err)
	}
	if err := (&topologymachinesetcontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
		return fmt.Errorf("testenv: setting up CAPI topology MachineSet controller: %w", err)
	}
	return nil
}
