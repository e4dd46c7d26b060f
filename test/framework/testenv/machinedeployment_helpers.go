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

// MachineDeployments, with the defaults Cluster API's webhook would give them.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// NewMachineDeployment returns (does not create) a MachineDeployment of cluster with replicas
// worker Machines of version KubernetesVersion, bootstrapped from the IgnitionConfigTemplate and
// built from the GenericInfrastructureMachineTemplate of the same name. It carries the defaults
// CAPI's MachineDeployment webhook would add (cluster-name label, selector and template labels
// on cluster-name and deployment-name, RollingUpdate 1/0): the harness runs no CAPI webhooks.
func NewMachineDeployment(cluster *clusterv1.Cluster, name string, replicas int32) *clusterv1.MachineDeployment {
	selector := map[string]string{
		clusterv1.ClusterNameLabel:           cluster.Name,
		clusterv1.MachineDeploymentNameLabel: name,
	}
	templateLabels := map[string]string{}
	for k, v := range selector {
		templateLabels[k] = v
	}
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster.Namespace,
			Name:      name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster.Name,
			Replicas:    &replicas,
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: templateLabels},
				Spec: clusterv1.MachineSpec{
					ClusterName:       cluster.Name,
					Version:           KubernetesVersion,
					Bootstrap:         clusterv1.Bootstrap{ConfigRef: IgnitionConfigTemplateRef(name)},
					InfrastructureRef: GenericInfraMachineTemplateRef(name),
				},
			},
		},
	}
}
