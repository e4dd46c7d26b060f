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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/feature"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// scope is everything one reconcile decides on: the config, its owner, its Cluster and its data
// Secret, gathered (Reconcile) before any decision is made and never changed after. The config's
// status is what the reconcile writes; what a step learns for a later one is returned by that
// step (nodeInput's digest, the resolver's unwatched references), not kept here.
type scope struct {
	config  *cabpiv1.IgnitionConfig
	cluster *clusterv1.Cluster
	configOwner
	// dataSecret is the config's data Secret (metadata only when read from the cache); nil
	// while there is none.
	dataSecret *corev1.Secret
	// dataSecretUnowned: dataSecret has no controller and the status does not record it
	// (restored, moved, or planted by someone who may create Secrets here).
	dataSecretUnowned bool
}

// configOwner is the config's Machine or MachinePool: exactly one of them is set.
type configOwner struct {
	machine     *clusterv1.Machine
	machinePool *clusterv1.MachinePool
}

// currentTokenID is the ID of the join token in the config's data, "" without one.
func (s *scope) currentTokenID() string {
	if s.dataSecret == nil {
		return ""
	}
	return s.dataSecret.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
}

// dataRole is the role the delivered data was rendered for: the data Secret's role annotation.
// Data written before the role was recorded is a worker's for a worker Machine or a MachinePool,
// and not known ("") for a control-plane Machine.
func (s *scope) dataRole() ignition.Role {
	if s.dataSecret == nil {
		return ""
	}
	if role := s.dataSecret.Annotations[cabpiv1.BootstrapRoleAnnotation]; role != "" {
		return ignition.Role(role)
	}
	if !s.isControlPlane() {
		return ignition.RoleWorkerJoin
	}
	return ""
}

// object returns the owner as a client.Object (for logging).
func (o configOwner) object() client.Object {
	if o.machinePool != nil {
		return o.machinePool
	}
	return o.machine
}

func (o configOwner) isMachinePool() bool { return o.machinePool != nil }

// isControlPlane is true for a Machine carrying Cluster API's control-plane label.
func (s *scope) isControlPlane() bool {
	if s.machine == nil {
		return false
	}
	_, ok := s.machine.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// machineJoined is true once a Machine's node joined (it has a nodeRef): its join token is then
// left to expire. A MachinePool never is: it keeps creating instances from the same data.
func (s *scope) machineJoined() bool {
	return s.machine != nil && s.machine.Status.NodeRef.IsDefined()
}

// kubernetesVersion is the owner's version, falling back to the Cluster topology's version.
func (s *scope) kubernetesVersion() string {
	v := ""
	if s.machinePool != nil {
		v = s.machinePool.Spec.Template.Spec.Version
	} else {
		v = s.machine.Spec.Version
	}
	if v == "" && s.cluster.Spec.Topology.IsDefined() {
		v = s.cluster.Spec.Topology.Version
	}
	return v
}

// role decides what kubeadm does on the node. controlPlaneInitialized comes from the Cluster.
func (s *scope) role() ignition.Role {
	switch {
	case !s.isControlPlane():
		return ignition.RoleWorkerJoin
	case s.controlPlaneInitialized():
		return ignition.RoleControlPlaneJoin
	default:
		return ignition.RoleInit
	}
}

// roleLabel is the "role" label of data rendered for role in cabpi's metrics: a MachinePool's
// join is told apart from a worker Machine's.
func (s *scope) roleLabel(role ignition.Role) metrics.RoleLabel {
	switch {
	case s.isMachinePool():
		return metrics.RoleLabelMachinePool
	case role == ignition.RoleWorkerJoin:
		return metrics.RoleLabelWorkerJoin
	case role == ignition.RoleControlPlaneJoin:
		return metrics.RoleLabelControlPlaneJoin
	default:
		return metrics.RoleLabelInit
	}
}

func (s *scope) controlPlaneInitialized() bool {
	for _, c := range s.cluster.Status.Conditions {
		if c.Type == clusterv1.ClusterControlPlaneInitializedCondition {
			return c.Status == "True"
		}
	}
	return false
}

// errNoOwner means the config has no Machine or MachinePool owner yet: Cluster API sets the
// owner reference when a Machine references the config, which triggers a new reconcile.
var errNoOwner = fmt.Errorf("no Machine or MachinePool owner yet")

// getOwner finds the Machine or MachinePool that owns the config.
func getOwner(ctx context.Context, c client.Reader, config *cabpiv1.IgnitionConfig) (configOwner, error) {
	for _, ref := range config.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterv1.GroupVersion.Group {
			continue
		}
		key := client.ObjectKey{Namespace: config.Namespace, Name: ref.Name}
		switch ref.Kind {
		case "Machine":
			m := &clusterv1.Machine{}
			if err := c.Get(ctx, key, m); err != nil {
				return configOwner{}, ownerGetError(err, "Machine", key)
			}
			return configOwner{machine: m}, nil
		case "MachinePool":
			if !feature.Gates.Enabled(feature.MachinePool) {
				continue
			}
			mp := &clusterv1.MachinePool{}
			if err := c.Get(ctx, key, mp); err != nil {
				return configOwner{}, ownerGetError(err, "MachinePool", key)
			}
			return configOwner{machinePool: mp}, nil
		}
	}
	return configOwner{}, errNoOwner
}

func ownerGetError(err error, kind string, key client.ObjectKey) error {
	if apierrors.IsNotFound(err) {
		return errNoOwner
	}
	return fmt.Errorf("getting owner %s %s: %w", kind, key, err)
}

// clusterName is the owner's spec.clusterName.
func (o configOwner) clusterName() string {
	if o.machinePool != nil {
		return o.machinePool.Spec.ClusterName
	}
	return o.machine.Spec.ClusterName
}

// clusterInfrastructureProvisioned is the Cluster's status.initialization.infrastructureProvisioned.
func (s *scope) clusterInfrastructureProvisioned() bool {
	return ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false)
}

// machineProvisioned is true once the Machine's infrastructure exists: from then on the
// machine may have booted with its data, which must not change under it.
func (s *scope) machineProvisioned() bool {
	return s.machine != nil && configinput.MachineProvisioningStarted(s.machine)
}

// ownerProvisioningStarted is the line after which delivered data never changes: the owner's
// infrastructure may have booted from it (configinput.MachineProvisioningStarted,
// MachinePoolProvisioningStarted).
func (s *scope) ownerProvisioningStarted() bool {
	if s.machinePool != nil {
		return configinput.MachinePoolProvisioningStarted(s.machinePool)
	}
	return s.machineProvisioned()
}

// kind is "Machine" or "MachinePool", for messages.
func (o configOwner) kind() string {
	if o.machinePool != nil {
		return "MachinePool"
	}
	return "Machine"
}

// infrastructureRef is the owner's infrastructure (AWSMachine, DockerMachine, ...): its kind
// names the platform, and with it the user-data limit and whether data may be compressed; for
// some kinds its spec says where the data is stored (delivery).
func (s *scope) infrastructureRef() clusterv1.ContractVersionedObjectReference {
	if s.machinePool != nil {
		return s.machinePool.Spec.Template.Spec.InfrastructureRef
	}
	return s.machine.Spec.InfrastructureRef
}

// platform is the effective platform of the config ("" when not known).
func (s *scope) platform() cabpiv1.Platform {
	return configinput.EffectivePlatform(&s.config.Spec, s.infrastructureRef().Kind)
}
