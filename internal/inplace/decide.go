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

package inplace

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The decision of the CanUpdate hooks: which of the differences between a Machine (or a
// MachineSet's template) as it is and as it should be this extension takes over, with no client
// and no clock. Cluster API compares what is left after the extension's patches: anything the
// extension does not take is rolled out by replacing the Machine, as without an extension.

// Side is one side (current or desired) of a CanUpdate request, decoded.
type Side struct {
	// Version is the Machine's (or the MachineSet template's) spec.version.
	Version string
	// Config is the IgnitionConfig spec (or the IgnitionConfigTemplate's template spec); nil when
	// the bootstrap config is not cabpi's.
	Config *cabpiv1.IgnitionConfigSpec
	// ControlPlane: the Machine (or the MachineSet's template) has Cluster API's control-plane
	// label.
	ControlPlane bool
}

// Verdict is what the extension takes over, and why it declines the rest.
type Verdict struct {
	// Version: the version change is taken (the patch sets the current version to the desired).
	Version bool
	// BaseURL: the change of the source's baseURL is taken.
	BaseURL bool
	// Declined says, for each difference not taken, why; empty when everything is taken.
	Declined []string
}

// Takes reports whether the verdict takes anything at all.
func (v Verdict) Takes() bool { return v.Version || v.BaseURL }

// Message is the verdict in one line, for the hook's response and the log.
func (v Verdict) Message() string {
	if len(v.Declined) == 0 {
		return "cabpi updates this change in place"
	}
	return "cabpi declines to update in place (Cluster API rolls these out by replacing the Machines): " + strings.Join(v.Declined, "; ")
}

// supportedSkewMinors is how many minor versions a kubelet may be behind the API server
// (Kubernetes' version skew policy since v1.28).
const supportedSkewMinors = 3

// Decide is the decision for one Machine (or MachineSet): current and desired, and the version of
// the workload cluster's API server ("" when it is not known).
func Decide(current, desired Side, controlPlaneVersion string) Verdict {
	var v Verdict
	decline := func(format string, args ...any) { v.Declined = append(v.Declined, fmt.Sprintf(format, args...)) }

	if current.Config == nil || desired.Config == nil {
		if current.Version != desired.Version {
			decline("the bootstrap config is not an IgnitionConfig")
		}
		return v
	}
	if current.ControlPlane || desired.ControlPlane {
		// cabpi renders a control-plane join from the label, and the node side updates a
		// worker's kubelet alone (kubeadm upgrade node on a control plane also upgrades its
		// static Pods and etcd, one member at a time, which is the control plane provider's).
		decline("the Machines have the %s label: control-plane nodes are not updated in place", clusterv1.MachineControlPlaneLabel)
		return v
	}
	cur, des := current.Config, desired.Config
	source := cur.Kubernetes.Source
	if !updatedInPlace(source) {
		if current.Version != desired.Version {
			decline("spec.kubernetes.source is %q: the image carries Kubernetes, so a new version needs a new image", sourceName(source))
		}
		return v
	}
	for _, p := range ChangedOutsideInPlace(*cur, *des) {
		decline("%s changed: only the Kubernetes version and the source's baseURL are updated in place", p.String())
	}
	if des.Kubernetes.Source != source {
		// Already declined above (spec.kubernetes.source is outside what is handled); the
		// version and baseURL are not taken either, the Machine is replaced.
		return v
	}
	v.BaseURL = mirror(cur.Kubernetes) != mirror(des.Kubernetes)

	if current.Version != desired.Version {
		if why := versionDeclined(current.Version, desired.Version, controlPlaneVersion); why != "" {
			decline("%s", why)
		} else {
			v.Version = true
		}
	}
	return v
}

// NeedsControlPlaneVersion reports whether Decide reads the control plane's version for current
// and desired: a version change of a source updated in place, which the version skew policy
// bounds.
func NeedsControlPlaneVersion(current, desired Side) bool {
	if current.Config == nil || desired.Config == nil || current.Version == desired.Version || current.ControlPlane || desired.ControlPlane {
		return false
	}
	source := current.Config.Kubernetes.Source
	return updatedInPlace(source) && desired.Config.Kubernetes.Source == source
}

// versionDeclined says why a kubelet at from cannot be moved to to in place in a cluster whose
// control plane runs controlPlane; "" when it can.
func versionDeclined(from, to, controlPlane string) string {
	f, errFrom := semver.ParseTolerant(from)
	t, errTo := semver.ParseTolerant(to)
	switch {
	case errFrom != nil || errTo != nil:
		return fmt.Sprintf("spec.version %q to %q: not both semantic versions", from, to)
	case t.LT(f):
		return fmt.Sprintf("spec.version %s is older than %s: kubeadm does not downgrade a node", to, from)
	case t.Major != f.Major || t.Minor > f.Minor+1:
		return fmt.Sprintf("spec.version %s skips a minor version from %s: kubeadm upgrades one minor version at a time", to, from)
	}
	if controlPlane == "" {
		return fmt.Sprintf("spec.version %s: the control plane's version is not known yet, so the version skew cannot be checked", to)
	}
	cp, err := semver.ParseTolerant(controlPlane)
	// A distribution's suffix (v1.34.4-eks-1, v1.34.4+k3s1) is the same release for the skew.
	cp.Pre, cp.Build = nil, nil
	switch {
	case err != nil:
		return fmt.Sprintf("spec.version %s: the control plane's version %q is not a semantic version", to, controlPlane)
	case t.Major != cp.Major || t.Minor > cp.Minor:
		// The policy bounds minor versions: a newer patch of the API server's minor is within it.
		return fmt.Sprintf("spec.version %s is newer than the control plane's %s: a kubelet must not be of a newer minor version than "+
			"the API server; upgrade the control plane first", to, controlPlane)
	case t.Minor+supportedSkewMinors < cp.Minor:
		return fmt.Sprintf("spec.version %s is more than %d minor versions behind the control plane's %s (Kubernetes' version skew policy)",
			to, supportedSkewMinors, controlPlane)
	}
	return ""
}

func sourceName(s cabpiv1.KubernetesSource) string {
	if s == "" {
		return string(cabpiv1.KubernetesSourceImage)
	}
	return string(s)
}
