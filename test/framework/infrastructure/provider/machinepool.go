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
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// MachinePoolReconciler runs an instance per replica of an NspawnMachinePool's MachinePool,
// following the InfraMachinePool contract: spec.providerIDList, status.replicas,
// status.initialization.provisioned, the Ready condition. Each instance is created from the
// pool's data Secret as it is at that moment, as a cloud's instance group reads its launch
// template: instances created after cabpi rotated the pool's join token get the new token.
type MachinePoolReconciler struct {
	Client    client.Client
	Instances *Instances
}

// SetupWithManager registers the reconciler: NspawnMachinePools and their MachinePools.
func (r *MachinePoolReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).For(&infrav1.NspawnMachinePool{}).WithOptions(opts).
		Named("nspawnmachinepool").
		Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			mp, ok := o.(*clusterv1.MachinePool)
			if !ok || mp.Spec.Template.Spec.InfrastructureRef.Kind != "NspawnMachinePool" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: mp.Namespace, Name: mp.Spec.Template.Spec.InfrastructureRef.Name}}}
		})).
		Complete(r)
}

// instanceKey is the Instances key of replica i of a pool.
func instanceKey(pool *infrav1.NspawnMachinePool, i int) types.NamespacedName {
	return types.NamespacedName{Namespace: pool.Namespace, Name: "nspawnmachinepool/" + pool.Name + "/" + strconv.Itoa(i)}
}

// Reconcile implements the InfraMachinePool contract.
func (r *MachinePoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &infrav1.NspawnMachinePool{}
	return prologue[*clusterv1.MachinePool]{client: r.Client, obj: pool, owner: util.GetOwnerMachinePool,
		finalizer:  infrav1.MachinePoolFinalizer,
		conditions: []string{infrav1.ReadyCondition},
		delete:     func(ctx context.Context) error { return r.reconcileDelete(ctx, pool) },
	}.run(ctx, req, func(cluster *clusterv1.Cluster, mp *clusterv1.MachinePool) (ctrl.Result, error) {
		return r.reconcileNormal(ctx, cluster, mp, pool)
	})
}

func setPoolReady(pool *infrav1.NspawnMachinePool, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(pool, metav1.Condition{Type: infrav1.ReadyCondition, Status: status, Reason: reason, Message: message})
}

func (r *MachinePoolReconciler) reconcileNormal(ctx context.Context, cluster *clusterv1.Cluster, mp *clusterv1.MachinePool, pool *infrav1.NspawnMachinePool) (ctrl.Result, error) {
	if !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		setPoolReady(pool, metav1.ConditionFalse, infrav1.WaitingForClusterInfrastructureReason, "the Cluster's infrastructure is not provisioned yet")
		return ctrl.Result{}, nil
	}
	secretName := mp.Spec.Template.Spec.Bootstrap.DataSecretName
	if secretName == nil {
		setPoolReady(pool, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "the MachinePool has no bootstrap data Secret yet")
		return ctrl.Result{}, nil
	}
	if !pool.Spec.Flavor.Stock() && mp.Spec.Template.Spec.Version != r.Instances.Kubernetes.Version {
		setPoolReady(pool, metav1.ConditionFalse, infrav1.UnsupportedKubernetesVersionReason,
			fmt.Sprintf("the node images carry Kubernetes %s, the MachinePool asks for %q", r.Instances.Kubernetes.Version, mp.Spec.Template.Spec.Version))
		return ctrl.Result{}, nil
	}
	desired := int(ptr.Deref(mp.Spec.Replicas, 1))
	var providerIDs, names []string
	for i := range desired {
		key := instanceKey(pool, i)
		inst := r.Instances.Get(key)
		if inst == nil {
			data, err := readBootstrapData(ctx, r.Client, mp.Namespace, *secretName)
			if err != nil {
				setPoolReady(pool, metav1.ConditionFalse, infrav1.BootstrapDataInvalidReason, err.Error())
				return ctrl.Result{}, nil
			}
			name := fmt.Sprintf("%s-%d", pool.Name, i)
			inst, err = r.Instances.Create(ctx, key, InstanceSpec{Name: name, Flavor: pool.Spec.Flavor, UUID: fmt.Sprintf("%s-%d", pool.UID, i), Ignition: data})
			if err != nil {
				setPoolReady(pool, metav1.ConditionFalse, infrav1.ProvisioningFailedReason, err.Error())
				return ctrl.Result{}, fmt.Errorf("creating instance %d of %s: %w", i, client.ObjectKeyFromObject(pool), err)
			}
			if err := inst.Boot(ctx); err != nil {
				setPoolReady(pool, metav1.ConditionFalse, infrav1.ProvisioningFailedReason, err.Error())
				return ctrl.Result{}, fmt.Errorf("booting instance %d of %s: %w", i, client.ObjectKeyFromObject(pool), err)
			}
		}
		providerIDs = append(providerIDs, ProviderIDPrefix+inst.Instance.UUID)
		names = append(names, inst.Name)
	}
	// Scale down: the instances past the desired count go, highest first.
	for i := len(pool.Status.Instances) - 1; i >= desired; i-- {
		if err := r.Instances.Delete(ctx, instanceKey(pool, i)); err != nil {
			return ctrl.Result{}, err
		}
	}
	pool.Spec.ProviderIDList = providerIDs
	pool.Status.Instances = names
	pool.Status.Replicas = ptr.To(int32(len(names)))
	pool.Status.Initialization.Provisioned = ptr.To(true)
	setPoolReady(pool, metav1.ConditionTrue, infrav1.RunningReason, "")
	return ctrl.Result{RequeueAfter: powerStateRecheck}, nil
}

// readBootstrapData reads a bootstrap data Secret (a Machine's or a MachinePool's): its value,
// in format ignition.
func readBootstrapData(ctx context.Context, c client.Client, namespace, name string) ([]byte, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading the bootstrap data Secret %s: %w", name, err)
	}
	if f := string(s.Data["format"]); f != "ignition" {
		return nil, fmt.Errorf("the bootstrap data Secret %s has format %q; these instances boot Ignition", name, f)
	}
	if len(s.Data["value"]) == 0 {
		return nil, fmt.Errorf("the bootstrap data Secret %s has no value", name)
	}
	return s.Data["value"], nil
}

// reconcileDelete removes every instance of the pool and lets the object go.
func (r *MachinePoolReconciler) reconcileDelete(ctx context.Context, pool *infrav1.NspawnMachinePool) error {
	var errs []error
	for i := range pool.Status.Instances {
		errs = append(errs, r.Instances.Delete(ctx, instanceKey(pool, i)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting the instances of %s: %w", client.ObjectKeyFromObject(pool), err)
	}
	if controllerutil.RemoveFinalizer(pool, infrav1.MachinePoolFinalizer) {
		return r.Client.Update(ctx, pool)
	}
	return nil
}
