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

package provider

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// ClusterReconciler provisions NspawnClusters. Either the suite runs the workload API server
// on the bridge and writes its endpoint into spec.controlPlaneEndpoint, or (spec.loadBalancer)
// the provider runs a load balancer in front of the cluster's control-plane Machines and writes
// its address there. The cluster is provisioned once the endpoint is set; Cluster API copies it
// into the Cluster.
type ClusterReconciler struct {
	Client    client.Client
	Instances *Instances
}

// SetupWithManager registers the reconciler: NspawnClusters, and the Machines and NspawnMachines
// of their clusters (the load balancer's backends).
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).For(&infrav1.NspawnCluster{}).WithOptions(opts).
		Named("nspawncluster").
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.toNspawnCluster)).
		Watches(&infrav1.NspawnMachine{}, handler.EnqueueRequestsFromMapFunc(r.toNspawnCluster)).
		Complete(r)
}

// toNspawnCluster maps an object of a cluster (cluster-name label) to the cluster's NspawnCluster.
func (r *ClusterReconciler) toNspawnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
		return nil
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "NspawnCluster" || ref.APIGroup != infrav1.GroupVersion.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
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
	key := client.ObjectKeyFromObject(nc)
	if !nc.DeletionTimestamp.IsZero() {
		if err := r.Instances.DeleteLoadBalancer(key); err != nil {
			return ctrl.Result{}, err
		}
		if controllerutil.RemoveFinalizer(nc, infrav1.ClusterFinalizer) {
			return ctrl.Result{}, nil // the deferred patch removes it
		}
		return ctrl.Result{}, nil
	}
	if nc.Spec.LoadBalancer {
		controllerutil.AddFinalizer(nc, infrav1.ClusterFinalizer)
		lb, err := r.Instances.LoadBalancer(key)
		if err != nil {
			conditions.Set(nc, metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse,
				Reason: infrav1.LoadBalancerFailedReason, Message: err.Error()})
			return ctrl.Result{}, fmt.Errorf("starting the load balancer of %s: %w", key, err)
		}
		host, port := lb.Endpoint()
		nc.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: host, Port: port}
		backends, err := r.controlPlaneBackends(ctx, cluster)
		if err != nil {
			return ctrl.Result{}, err
		}
		lb.SetBackends(backends)
		nc.Status.LoadBalancerBackends = backends
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

// controlPlaneBackends are the API servers of the cluster's control-plane Machines that have an
// address: the nodes being created too, so that the first one's kubeadm init reaches its own API
// server through the endpoint.
func (r *ClusterReconciler) controlPlaneBackends(ctx context.Context, cluster *clusterv1.Cluster) ([]string, error) {
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name},
		client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, fmt.Errorf("listing the control-plane Machines of %s: %w", cluster.Name, err)
	}
	var backends []string
	for _, m := range machines.Items {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		nm := &infrav1.NspawnMachine{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, nm); err != nil {
			continue
		}
		for _, a := range nm.Status.Addresses {
			if a.Type == clusterv1.MachineInternalIP {
				backends = append(backends, apiServerBackend(a.Address))
			}
		}
	}
	slices.Sort(backends)
	return backends, nil
}
