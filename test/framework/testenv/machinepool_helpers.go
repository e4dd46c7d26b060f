package testenv

// MachinePools.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"
)

// NewMachinePool returns (does not create) a MachinePool of cluster with replicas, version
// KubernetesVersion, whose bootstrap configRef is the IgnitionConfig name and whose
// infrastructureRef the GenericInfrastructureMachinePool name (builder.InfrastructureMachinePool).
func NewMachinePool(cluster *clusterv1.Cluster, name string, replicas int32) *clusterv1.MachinePool {
	return &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: cluster.Name,
			Replicas:    &replicas,
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: cluster.Name,
				Version:     KubernetesVersion,
				Bootstrap:   clusterv1.Bootstrap{ConfigRef: IgnitionConfigRef(name)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachinePoolKind, Name: name,
				},
			}},
		},
	}
}
