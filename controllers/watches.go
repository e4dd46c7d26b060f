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

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/feature"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

var configGroupKind = schema.GroupKind{Group: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfig"}

func configRequest(ns string, ref clusterv1.ContractVersionedObjectReference) []ctrl.Request {
	if !ref.IsDefined() || ref.GroupKind() != configGroupKind {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: ref.Name}}}
}

// machineToConfig enqueues the IgnitionConfig a Machine references.
func (r *Reconciler) machineToConfig(_ context.Context, o client.Object) []ctrl.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}
	return configRequest(m.Namespace, m.Spec.Bootstrap.ConfigRef)
}

// machinePoolToConfig enqueues the IgnitionConfig a MachinePool references.
func (r *Reconciler) machinePoolToConfig(_ context.Context, o client.Object) []ctrl.Request {
	mp, ok := o.(*clusterv1.MachinePool)
	if !ok {
		return nil
	}
	return configRequest(mp.Namespace, mp.Spec.Template.Spec.Bootstrap.ConfigRef)
}

// clusterToConfigs enqueues every IgnitionConfig of the Cluster's Machines and MachinePools.
func (r *Reconciler) clusterToConfigs(ctx context.Context, o client.Object) []ctrl.Request {
	opts := []client.ListOption{
		client.InNamespace(o.GetNamespace()),
		client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()},
	}
	var out []ctrl.Request
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Machines of the Cluster")
		return nil
	}
	for i := range machines.Items {
		out = append(out, r.machineToConfig(ctx, &machines.Items[i])...)
	}
	if feature.Gates.Enabled(feature.MachinePool) {
		pools := &clusterv1.MachinePoolList{}
		if err := r.Client.List(ctx, pools, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing MachinePools of the Cluster")
			return nil
		}
		for i := range pools.Items {
			out = append(out, r.machinePoolToConfig(ctx, &pools.Items[i])...)
		}
	}
	return out
}
