package provider

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// ClusterReconciler provisions NspawnClusters. The suite runs the workload API server on the
// bridge and writes its endpoint into spec.controlPlaneEndpoint; the cluster is provisioned
// once it is there, and Cluster API copies it into the Cluster.
type ClusterReconciler struct {
	Client client.Client
}

// SetupWithManager registers the reconciler.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).For(&infrav1.NspawnCluster{}).WithOptions(opts).
		Named("nspawncluster").Complete(r)
}

// Reconcile implements the InfraCluster contract.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	nc := &infrav1.NspawnCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := util.GetOwnerCluster(ctx, r.Client, nc.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("getting the owner Cluster of %s: %w", req, err)
	}
	if cluster == nil {
		return ctrl.Result{}, nil // Cluster API sets the owner reference; it triggers a reconcile.
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, nc); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(nc, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := helper.Patch(ctx, nc, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}}); err != nil {
			retErr = err
		}
	}()
	if !nc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing on the host belongs to the cluster itself
	}
	if !nc.Spec.ControlPlaneEndpoint.IsValid() {
		conditions.Set(nc, metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: infrav1.WaitingForControlPlaneEndpointReason, Message: "spec.controlPlaneEndpoint is not set"})
		return ctrl.Result{}, nil
	}
	nc.Status.Initialization.Provisioned = ptr.To(true)
	conditions.Set(nc, metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: infrav1.ProvisionedReason})
	return ctrl.Result{}, nil
}
