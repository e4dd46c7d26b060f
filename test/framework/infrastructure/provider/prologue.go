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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// work, in the order of Cluster API's providers: the object, and its owner (a Machine or a
// MachinePool, of type O); without an owner yet, nothing but a deletion; then the owner's
// Cluster, the paused condition, the deletion, the finalizer, and a patch helper that writes the
// object (its owned conditions) when the work ends.
type prologue[O interface {
	comparable
	client.Object
}] struct {
	client client.Client
	// obj is read into by the request's name.
	obj paused.ConditionSetter
	// owner finds obj's owner (util.GetOwnerMachine, util.GetOwnerMachinePool): nil when obj has
	// no owner reference yet.
	owner      func(context.Context, client.Client, metav1.ObjectMeta) (O, error)
	finalizer  string
	conditions []string
	delete     func(context.Context) error
}

// run does the prologue for the object req names, then normal with the owner and its Cluster.
func (p prologue[O]) run(ctx context.Context, req ctrl.Request, normal func(*clusterv1.Cluster, O) (ctrl.Result, error)) (_ ctrl.Result, retErr error) {
	if err := p.client.Get(ctx, req.NamespacedName, p.obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner, err := p.owner(ctx, p.client, objectMeta(p.obj))
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("getting the owner of %s: %w", req, err)
	}
	deleting := !p.obj.GetDeletionTimestamp().IsZero()
	var none O
	if owner == none {
		if deleting {
			return ctrl.Result{}, p.delete(ctx)
		}
		return ctrl.Result{}, nil // the owner's controller sets the owner reference
	}
	cluster, err := util.GetClusterFromMetadata(ctx, p.client, objectMeta(owner))
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
	return normal(cluster, owner)
}

// objectMeta is what Cluster API's lookups (util.GetOwnerMachine, util.GetClusterFromMetadata)
// read of an object: its namespace, labels and owner references.
func objectMeta(o metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), Labels: o.GetLabels(), OwnerReferences: o.GetOwnerReferences()}
}
