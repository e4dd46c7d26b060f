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

	"github.com/blang/semver/v4"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// The join skew guard (docs/adr/045): a join is rendered only at a version kubeadm can join to
// the control plane. Cluster API's MachineSet preflight checks (KubernetesVersionSkew,
// KubeadmVersionSkew) hold only KubeadmConfigTemplates to it, so cabpi's Machines never get them:
// a join rendered at a version kubeadm refuses fails on the node, and the Machine waits for a
// Node that never comes.

// controlPlaneVersions are the oldest and the newest Kubernetes versions of the Cluster's other
// control-plane Machines (label cluster.x-k8s.io/control-plane): what the control plane runs, and
// during its upgrade what it goes to. Empty when it has none (a managed control plane, or one no
// Machine of which exists yet).
type controlPlaneVersions struct {
	oldest, newest string
}

// skewVerdict is what joinSkew finds.
type skewVerdict int

const (
	// skewSupported: kubeadm joins the Machine at its version (or nothing says otherwise).
	skewSupported skewVerdict = iota
	// skewAheadOfControlPlane: the Machine is newer than the control plane allows: it renders
	// once the control plane catches up.
	skewAheadOfControlPlane
	// skewBehindKubeadm: the Machine's minor is more than one behind the control plane's newest;
	// kubeadm joins only at the control plane's minor or the one before it. Waiting does not help.
	skewBehindKubeadm
)

// joinSkew is the rule, in minors (the skew policy's unit: a patch ahead is fine). A worker's
// kubelet must not be newer than any API server: it is held to the oldest control-plane
// Machine, and waits for the last of them during a control-plane upgrade. A control-plane join is
// how a control plane upgrades, one minor at a time: it may be one minor ahead of the newest
// control-plane Machine, no more. Either is refused when more than one minor behind the newest
// (kubeadm's join). Versions that do not parse or cabpi cannot render for, another major, or no
// control-plane Machine hold nothing (the render says what is wrong with a version). The second
// result is the control plane's version the verdict is about.
func joinSkew(role ignition.Role, machine string, cp controlPlaneVersions) (skewVerdict, string) {
	// A version cabpi cannot render for at all is the render's to report (its reason names the
	// version's own problem, which no control plane fixes).
	if role == ignition.RoleInit || cp.oldest == "" || cp.newest == "" || ignition.ValidateKubernetesVersion(machine) != nil {
		return skewSupported, ""
	}
	m, errM := semver.ParseTolerant(machine)
	oldest, errO := semver.ParseTolerant(cp.oldest)
	newest, errN := semver.ParseTolerant(cp.newest)
	if errM != nil || errO != nil || errN != nil || m.Major != oldest.Major || m.Major != newest.Major {
		return skewSupported, ""
	}
	switch {
	case role == ignition.RoleWorkerJoin && m.Minor > oldest.Minor:
		return skewAheadOfControlPlane, cp.oldest
	case role == ignition.RoleControlPlaneJoin && m.Minor > newest.Minor+1:
		return skewAheadOfControlPlane, cp.newest
	case m.Minor+1 < newest.Minor:
		return skewBehindKubeadm, cp.newest
	}
	return skewSupported, ""
}

// readControlPlaneVersions lists the Cluster's control-plane Machines from the cache (Machines
// are watched, by cluster-name label) and returns the oldest and newest version among those other
// than the config's own Machine.
func (r *Reconciler) readControlPlaneVersions(ctx context.Context, s *scope) (controlPlaneVersions, error) {
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(s.cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: s.cluster.Name}, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return controlPlaneVersions{}, fmt.Errorf("listing the control-plane Machines of Cluster %s: %w", s.cluster.Name, err)
	}
	var v controlPlaneVersions
	var oldest, newest semver.Version
	for _, m := range machines.Items {
		if s.machine != nil && m.UID == s.machine.UID {
			continue
		}
		ver, err := semver.ParseTolerant(m.Spec.Version)
		if err != nil {
			continue
		}
		if v.oldest == "" || ver.LT(oldest) {
			v.oldest, oldest = m.Spec.Version, ver
		}
		if v.newest == "" || ver.GT(newest) {
			v.newest, newest = m.Spec.Version, ver
		}
	}
	return v, nil
}
