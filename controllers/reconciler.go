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

package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/locking"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// DefaultTokenTTL is how long a join token lives when --bootstrap-token-ttl is not set.
const DefaultTokenTTL = 15 * time.Minute

// DefaultReferenceRecheckInterval is how often delivered data that may still change is looked at
// again when it reads a Secret or ConfigMap no watch sees (Reconciler.ReferenceRecheckInterval).
const DefaultReferenceRecheckInterval = time.Minute

// InitLocker is the kubeadm init lock of a Cluster: only the control-plane Machine holding it
// gets kubeadm init data, the others join once the control plane is initialized. It is Cluster
// API's CABPK InitLocker; the manager's is locking.ControlPlaneInitMutex, a ConfigMap owned by the
// Cluster, so that it survives manager restarts.
type InitLocker interface {
	// Lock takes the Cluster's lock for machine; true when machine holds it (again).
	Lock(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine) bool
	// Unlock releases the Cluster's lock; true when no lock is held any more.
	Unlock(ctx context.Context, cluster *clusterv1.Cluster) bool
}

// Reconciler renders IgnitionConfigs into bootstrap data Secrets.
type Reconciler struct {
	// Client reads and writes the management cluster. Secrets and ConfigMaps are not cached
	// (the manager disables the cache for them), so reads of them go to the API server.
	Client client.Client
	// SecretCachingClient reads Secrets through the manager's cache, which holds only
	// cluster-labelled Secrets (internal/secretcache): data Secrets (metadata only) and cluster
	// certificates. A miss falls back to Client, so it is an optimisation, never the truth.
	SecretCachingClient client.Client
	// APIReader reads past the cache; used where a stale cached config would make the
	// controller write an outdated status. Optional.
	APIReader client.Reader
	// ClusterCache gives clients for workload clusters (join tokens).
	ClusterCache clustercache.ClusterCache
	// Recorder emits events; messages never carry secret material.
	Recorder events.EventRecorder
	// WatchFilterValue is the --watch-filter label value.
	WatchFilterValue string
	// TokenTTL is the lifetime of join tokens; refreshed until the node joined.
	TokenTTL time.Duration
	// InitLock decides which control-plane Machine renders kubeadm init. Default: Cluster API's
	// ConfigMap lock (locking.ControlPlaneInitMutex) on Client.
	InitLock InitLocker
	// Clock is the time join tokens' expirations are computed from and compared with. Default:
	// the real clock.
	Clock clock.PassiveClock
	// ReferenceRecheckInterval is how often delivered data that may still change (its owner has
	// not started provisioning) is looked at again when its inputs read a Secret or ConfigMap
	// without the cluster-name label, whose changes no watch sees (docs/adr/015). Default:
	// DefaultReferenceRecheckInterval.
	ReferenceRecheckInterval time.Duration

	// unlocked holds the UIDs of Clusters whose init lock this manager found released once
	// their control plane was initialized: no lock is taken after that, so no join needs to
	// look for one again (it would cost a ConfigMap read per join). Authority: InitLock.
	unlocked sync.Map
	// memory caches, per config, facts whose authority is elsewhere (memory.go): the expiration
	// of its join token, inputs that do not render, the spec generation said not to be rendered.
	memory memory
}

// defaults fills what was left unset with what the manager uses (internal/setup sets them all).
func (r *Reconciler) defaults() {
	if r.TokenTTL <= 0 {
		r.TokenTTL = DefaultTokenTTL
	}
	if r.InitLock == nil {
		r.InitLock = locking.NewControlPlaneInitMutex(r.Client)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.ReferenceRecheckInterval <= 0 {
		r.ReferenceRecheckInterval = DefaultReferenceRecheckInterval
	}
}

// ownedConditions are the conditions this controller writes (patchStatus: its changes to them win).
var ownedConditions = []string{
	cabpiv1.ReadyCondition,
	cabpiv1.PausedCondition,
	cabpiv1.DataSecretAvailableCondition,
	cabpiv1.CertificatesAvailableCondition,
}

// SetupWithManager registers the controller and its watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.SecretCachingClient == nil || r.ClusterCache == nil {
		return fmt.Errorf("IgnitionConfig reconciler needs a Client, a SecretCachingClient and a ClusterCache")
	}
	r.defaults()
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "ignitionconfig")

	b := ctrl.NewControllerManagedBy(mgr).
		For(&cabpiv1.IgnitionConfig{}).
		Named("ignitionconfig").
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToConfig))
	if feature.Gates.Enabled(feature.MachinePool) {
		b = b.Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(r.machinePoolToConfig))
	}
	b = b.Watches(&clusterv1.Cluster{},
		handler.EnqueueRequestsFromMapFunc(r.clusterToConfigs),
		builderPredicates(predicates.Any(mgr.GetScheme(), log,
			predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log),
			predicates.ClusterControlPlaneInitialized(mgr.GetScheme(), log),
		)),
	).WatchesRawSource(r.ClusterCache.GetClusterSource("ignitionconfig", r.clusterToConfigs))
	if err := r.watchReferences(ctx, mgr, b); err != nil {
		return err
	}

	if err := b.Complete(r); err != nil {
		return fmt.Errorf("setting up the IgnitionConfig controller: %w", err)
	}
	return nil
}

func builderPredicates(p predicate.Predicate) builder.Predicates { return builder.WithPredicates(p) }

// The manager's permissions: exactly what the code uses. test/rbac/allowlist_test.go lists each
// with its reason and fails on any change that does not update it.
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigs/status,verbs=patch
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;machines;machinepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=awsmachines;awsmachinepools,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile gathers what one IgnitionConfig's reconcile decides on (scope, then facts), decides
// (decide.go: pure), carries the decision out (execute.go) and applies its outcome to the status,
// events and result (outcome.go); the status is patched on the way out.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, rerr error) {
	log := ctrl.LoggerFrom(ctx)

	config := &cabpiv1.IgnitionConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, config); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !config.DeletionTimestamp.IsZero() {
		// The data Secret goes with the config through its owner reference.
		r.memory.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	owner, err := getOwner(ctx, r.Client, config)
	if err != nil {
		if errors.Is(err, errNoOwner) {
			log.V(4).Info("Waiting for a Machine or MachinePool to own this config")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	log = log.WithValues(owner.kind(), klog.KObj(owner.object()), "Cluster", klog.KRef(config.Namespace, owner.clusterName()))
	ctx = ctrl.LoggerInto(ctx, log)

	cluster, err := util.GetClusterByName(ctx, r.Client, config.Namespace, owner.clusterName())
	if err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("Waiting for the Cluster to be created")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting Cluster %s: %w", owner.clusterName(), err)
	}

	before := config.DeepCopy()
	markNewConfigNotPaused(cluster, config)
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, config); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}

	leaveStatus := false
	defer func() {
		if leaveStatus {
			return // see outcome.stale and outcome.leaveStatus
		}
		if err := r.patchStatus(ctx, before, config, rerr == nil); err != nil {
			rerr = kerrors.NewAggregate([]error{rerr, err})
		}
	}()

	// A data Secret restored without owner (backup, move) that the status records is adopted
	// before anything else; one it does not record is decide's.
	dataSecret, unowned, err := r.getDataSecret(ctx, config, cluster.Name)
	conflict := err
	if !errors.Is(err, errDataSecretConflict) {
		conflict = nil
		if err != nil {
			return ctrl.Result{}, err
		}
	}

	s := &scope{config: config, cluster: cluster, configOwner: owner, dataSecret: dataSecret, dataSecretUnowned: unowned}
	f, err := r.gather(ctx, s, conflict)
	if err != nil {
		return ctrl.Result{}, err
	}
	a := decide(f, r.policy())
	log.V(4).Info("Decided", "action", a.kind.String())
	o := r.execute(ctx, s, a)
	leaveStatus = o.stale || o.leaveStatus
	return r.apply(config, o)
}

// policy is the configuration decide uses.
func (r *Reconciler) policy() policy {
	return policy{tokenTTL: r.TokenTTL, referenceRecheckInterval: r.ReferenceRecheckInterval}
}

// markNewConfigNotPaused gives a new config that is not paused its NotPaused condition, as
// EnsurePausedCondition would, so that it goes with the rest of this reconcile's status in one
// patch: EnsurePausedCondition would patch it alone and ask for a whole extra reconcile first (a
// third of the writes of a new worker). It must set exactly what EnsurePausedCondition sets, or
// that patches anyway (TestNotPausedConditionNeedsNoPatchOfItsOwn).
func markNewConfigNotPaused(cluster *clusterv1.Cluster, config *cabpiv1.IgnitionConfig) {
	if conditions.Get(config, clusterv1.PausedCondition) == nil && !annotations.IsPaused(cluster, config) {
		conditions.Set(config, metav1.Condition{Type: clusterv1.PausedCondition, Status: metav1.ConditionFalse,
			Reason: clusterv1.NotPausedReason, ObservedGeneration: config.Generation})
	}
}

// setReady summarises DataSecretAvailable and CertificatesAvailable into Ready.
func setReady(config *cabpiv1.IgnitionConfig) error {
	if err := conditions.SetSummaryCondition(config, config, cabpiv1.ReadyCondition,
		conditions.ForConditionTypes{cabpiv1.DataSecretAvailableCondition, cabpiv1.CertificatesAvailableCondition},
		conditions.IgnoreTypesIfMissing{cabpiv1.CertificatesAvailableCondition},
		conditions.CustomMergeStrategy{MergeStrategy: conditions.DefaultMergeStrategy(
			conditions.ComputeReasonFunc(conditions.GetDefaultComputeMergeReasonFunc(
				cabpiv1.NotReadyReason, cabpiv1.ReadyUnknownReason, cabpiv1.ReadyReason,
			)),
		)},
	); err != nil {
		return fmt.Errorf("computing Ready of %s: %w", klog.KObj(config), err)
	}
	return nil
}
