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
	"time"

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

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// ProviderIDPrefix is what a node named from OpenStack metadata reports as its provider ID,
// before the instance UUID.
const ProviderIDPrefix = "openstack:///"

// powerStateRecheck is how often a running instance's power state is looked at again (a test
// may power it off).
const powerStateRecheck = 10 * time.Second

// sentinelRecheck is how often a running node is looked at for the bootstrap sentinel.
const sentinelRecheck = 2 * time.Second

// MachineReconciler runs an instance per NspawnMachine.
type MachineReconciler struct {
	Client    client.Client
	Instances *Instances
}

// SetupWithManager registers the reconciler: NspawnMachines, their Machines (the bootstrap data
// arrives there) and their Clusters (the infrastructure becomes provisioned).
func (r *MachineReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).For(&infrav1.NspawnMachine{}).WithOptions(opts).
		Named("nspawnmachine").
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(
			util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind("NspawnMachine")))).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToMachines)).
		Complete(r)
}

func (r *MachineReconciler) clusterToMachines(ctx context.Context, o client.Object) []reconcile.Request {
	list := &infrav1.NspawnMachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, m := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
	}
	return reqs
}

// Reconcile implements the InfraMachine contract: spec.providerID,
// status.initialization.provisioned, status.addresses, the Ready condition (its reason is the
// failure reporting), and deletion.
func (r *MachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nm := &infrav1.NspawnMachine{}
	return prologue[*clusterv1.Machine]{client: r.Client, obj: nm, owner: util.GetOwnerMachine,
		finalizer:  infrav1.MachineFinalizer,
		conditions: []string{infrav1.ReadyCondition, infrav1.BootstrapSucceededCondition},
		delete:     func(ctx context.Context) error { return r.reconcileDelete(ctx, nm) },
	}.run(ctx, req, func(cluster *clusterv1.Cluster, machine *clusterv1.Machine) (ctrl.Result, error) {
		return r.reconcileNormal(ctx, cluster, machine, nm)
	})
}

func setReady(nm *infrav1.NspawnMachine, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(nm, metav1.Condition{Type: infrav1.ReadyCondition, Status: status, Reason: reason, Message: message})
}

func (r *MachineReconciler) reconcileNormal(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine, nm *infrav1.NspawnMachine) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(nm)
	if !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		setReady(nm, metav1.ConditionFalse, infrav1.WaitingForClusterInfrastructureReason, "the Cluster's infrastructure is not provisioned yet")
		return ctrl.Result{}, nil
	}
	inst := r.Instances.Get(key)
	if inst == nil {
		if ptr.Deref(nm.Status.Initialization.Provisioned, false) {
			// Provisioned before, now gone (the suite's process is not the one that made it):
			// an instance is never made twice from the same data.
			setReady(nm, metav1.ConditionFalse, infrav1.ProvisioningFailedReason, "the instance is gone; delete the Machine so that it is replaced")
			return ctrl.Result{}, nil
		}
		if machine.Spec.Bootstrap.DataSecretName == nil {
			setReady(nm, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "the Machine has no bootstrap data Secret yet")
			return ctrl.Result{}, nil
		}
		// A stock image has no Kubernetes of its own: the bootstrap data brings the version.
		if !nm.Spec.Flavor.Stock() && machine.Spec.Version != r.Instances.Kubernetes.Version {
			setReady(nm, metav1.ConditionFalse, infrav1.UnsupportedKubernetesVersionReason,
				fmt.Sprintf("the node images carry Kubernetes %s, the Machine asks for %q", r.Instances.Kubernetes.Version, machine.Spec.Version))
			return ctrl.Result{}, nil
		}
		data, err := readBootstrapData(ctx, r.Client, machine.Namespace, *machine.Spec.Bootstrap.DataSecretName)
		if err != nil {
			setReady(nm, metav1.ConditionFalse, infrav1.BootstrapDataInvalidReason, err.Error())
			return ctrl.Result{}, nil
		}
		inst, err = r.Instances.Create(ctx, key, InstanceSpec{Name: machine.Name, Flavor: nm.Spec.Flavor, UUID: string(nm.UID), Ignition: data})
		switch {
		case errors.Is(err, ErrBootstrapData):
			setReady(nm, metav1.ConditionFalse, infrav1.BootstrapDataInvalidReason, err.Error())
			return ctrl.Result{}, nil
		case err != nil:
			setReady(nm, metav1.ConditionFalse, infrav1.ProvisioningFailedReason, err.Error())
			return ctrl.Result{}, fmt.Errorf("creating the instance of %s: %w", key, err)
		}
	}
	// The instance's own UUID (the NspawnMachine's UID when it was made), not the object's UID:
	// an object moved to another management cluster (clusterctl move) is a new object with a
	// new UID for the same instance, whose provider ID must not change.
	nm.Spec.ProviderID = ProviderIDPrefix + inst.Instance.UUID
	nm.Status.InstanceUUID = inst.Instance.UUID
	nm.Status.Addresses = []clusterv1.MachineAddress{
		{Type: clusterv1.MachineInternalIP, Address: inst.Address.String()},
		{Type: clusterv1.MachineHostName, Address: inst.Name},
	}
	nm.Status.Initialization.Provisioned = ptr.To(true)

	switch {
	case nm.Spec.BootHeld && !inst.Booted():
		setReady(nm, metav1.ConditionFalse, infrav1.BootHeldReason, "the instance is created and not booted: spec.bootHeld")
		return ctrl.Result{}, nil
	case !inst.Booted():
		if err := inst.Boot(ctx); err != nil {
			setReady(nm, metav1.ConditionFalse, infrav1.ProvisioningFailedReason, err.Error())
			return ctrl.Result{}, fmt.Errorf("booting the instance of %s: %w", key, err)
		}
		nm.Status.BootTime = ptr.To(metav1.Now())
	case !inst.Running():
		// Powered off after its first boot (by a test): the power state is the user's.
		setReady(nm, metav1.ConditionFalse, infrav1.PoweredOffReason, "the instance is powered off")
		return ctrl.Result{RequeueAfter: powerStateRecheck}, nil
	}
	setReady(nm, metav1.ConditionTrue, infrav1.RunningReason, "")
	return r.reconcileBootstrap(ctx, nm, inst), nil
}

// reconcileBootstrap reports the node's bootstrap sentinel. Besides telling a user what the node
// did, the change of the NspawnMachine wakes Cluster API's Machine controller: before the
// control plane is initialized it watches no Node, so the first control-plane Machine would
// otherwise wait for its next resync to find its Node.
func (r *MachineReconciler) reconcileBootstrap(ctx context.Context, nm *infrav1.NspawnMachine, inst *Instance) ctrl.Result {
	if conditions.IsTrue(nm, infrav1.BootstrapSucceededCondition) {
		return ctrl.Result{RequeueAfter: powerStateRecheck}
	}
	if _, err := inst.Exec(ctx, "test", "-e", ignition.SentinelPath); err != nil {
		conditions.Set(nm, metav1.Condition{Type: infrav1.BootstrapSucceededCondition, Status: metav1.ConditionFalse,
			Reason: infrav1.WaitingForSentinelReason, Message: ignition.SentinelPath + " is not on the node yet"})
		return ctrl.Result{RequeueAfter: sentinelRecheck}
	}
	conditions.Set(nm, metav1.Condition{Type: infrav1.BootstrapSucceededCondition, Status: metav1.ConditionTrue, Reason: infrav1.SentinelFoundReason})
	return ctrl.Result{RequeueAfter: powerStateRecheck}
}

// reconcileDelete powers the instance off, keeps its journal, removes its root and lets the
// object go.
func (r *MachineReconciler) reconcileDelete(ctx context.Context, nm *infrav1.NspawnMachine) error {
	if err := r.Instances.Delete(ctx, client.ObjectKeyFromObject(nm)); err != nil {
		return fmt.Errorf("deleting the instance of %s: %w", client.ObjectKeyFromObject(nm), err)
	}
	if controllerutil.RemoveFinalizer(nm, infrav1.MachineFinalizer) {
		return r.Client.Update(ctx, nm)
	}
	return nil
}
