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

// Cluster API's generic infrastructure objects (sigs.k8s.io/cluster-api/util/test/builder) and
// the status of any object a contract-versioned reference names, as its provider would set it.

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/test/builder"
)

// NewGenericInfraCluster returns a GenericInfrastructureCluster (infrastructure.cluster.x-k8s.io/v1beta2).
func NewGenericInfraCluster(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(builder.InfrastructureGroupVersion.String())
	u.SetKind(builder.GenericInfrastructureClusterKind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// NewGenericInfraMachine returns a GenericInfrastructureMachine (infrastructure.cluster.x-k8s.io/v1beta2).
func NewGenericInfraMachine(namespace, name string) *unstructured.Unstructured {
	return builder.InfrastructureMachine(namespace, name).Build()
}

// GenericInfraMachineRef references the GenericInfrastructureMachine name.
func GenericInfraMachineRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: builder.InfrastructureGroupVersion.Group,
		Kind:     builder.GenericInfrastructureMachineKind,
		Name:     name,
	}
}

// NewGenericInfraMachineTemplate returns a GenericInfrastructureMachineTemplate (with an empty
// spec.template.spec), what MachineSets clone GenericInfrastructureMachines from.
func NewGenericInfraMachineTemplate(namespace, name string) *unstructured.Unstructured {
	return builder.InfrastructureMachineTemplate(namespace, name).Build()
}

// GenericInfraMachineTemplateRef references the GenericInfrastructureMachineTemplate name.
func GenericInfraMachineTemplateRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: builder.InfrastructureGroupVersion.Group,
		Kind:     builder.GenericInfrastructureMachineTemplateKind,
		Name:     name,
	}
}

// setNestedStatus sets status fields of the object referenced by ref (resolved like CAPI does,
// through the CRD's contract label). NotFound is returned as is.
func (e *Environment) setNestedStatus(ctx context.Context, namespace string, ref clusterv1.ContractVersionedObjectReference, value any, path ...string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, ref, namespace)
		if err != nil {
			return err
		}
		before := obj.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, value, append([]string{"status"}, path...)...); err != nil {
			return err
		}
		return e.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}
