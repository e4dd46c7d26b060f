package provider

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
)

// prologue is what the reconcilers of NspawnMachines and NspawnMachinePools do before their own
// work, in the order of Cluster API's providers: without an owner (Machine or MachinePool) yet,
// nothing but a deletion; then the owner's Cluster, the paused condition, the deletion, the
// finalizer, and a patch helper that writes the object (its owned conditions) when the work ends.
type prologue struct {
	client     client.Client
	obj        paused.ConditionSetter
	finalizer  string
	conditions []string
	delete     func(context.Context) error
}

// run does the prologue for an object whose owner has ownerMeta (nil for no owner yet), then
// normal with the owner's Cluster.
func (p prologue) run(ctx context.Context, ownerMeta *metav1.ObjectMeta, normal func(*clusterv1.Cluster) (ctrl.Result, error)) (_ ctrl.Result, retErr error) {
	deleting := !p.obj.GetDeletionTimestamp().IsZero()
	if ownerMeta == nil {
		if deleting {
			return ctrl.Result{}, p.delete(ctx)
		}
		return ctrl.Result{}, nil // the owner's controller sets the owner reference
	}
	cluster, err := util.GetClusterFromMetadata(ctx, p.client, *ownerMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the Cluster of %s: %w", p.obj.GetName(), err)
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, p.client, cluster, p.obj); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	if deleting {
		return ctrl.Result{}, p.delete(ctx)
	}
	if controllerutil.AddFinalizer(p.obj, p.finalizer) {
		return ctrl.Result{}, p.client.Update(ctx, p.obj)
	}
	helper, err := patch.NewHelper(p.obj, p.client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := helper.Patch(ctx, p.obj, patch.WithOwnedConditions{Conditions: p.conditions}); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	return normal(cluster)
}
