package ignition

import (
	"slices"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmtypes "sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types"
)

// kubeadmDocumentSeparator joins the ClusterConfiguration and InitConfiguration documents of
// /etc/kubeadm.yml; kubeadm reads both from one multi-document file.
const kubeadmDocumentSeparator = "---\n"

// ValidateKubernetesVersion reports whether kubeadm configuration can be written for the
// Kubernetes version v ("v1.34.0", "1.34"): it must parse as semver and be at least 1.22, the
// oldest version Cluster API's kubeadm types serialise. The error is an *Error with Kind
// ErrUnsupportedKubernetesVersion and Field "version".
func ValidateKubernetesVersion(v string) error {
	_, err := parseKubernetesVersion(v)
	return asError(err)
}

// parseKubernetesVersion parses v and asks Cluster API which kubeadm API serves it, so the
// supported range is exactly the one the marshalling functions accept.
func parseKubernetesVersion(v string) (semver.Version, *Error) {
	ver, err := semver.ParseTolerant(v)
	if err != nil {
		return semver.Version{}, errorf(ErrUnsupportedKubernetesVersion, "version",
			"Kubernetes version %q is not a semantic version: %v", v, err)
	}
	if _, err := kubeadmtypes.KubeVersionToKubeadmAPIGroupVersion(ver); err != nil {
		return semver.Version{}, errorf(ErrUnsupportedKubernetesVersion, "version",
			"Kubernetes version %q is not supported: %v", v, err)
	}
	return ver, nil
}

// kubeadmConfig writes /etc/kubeadm.yml for the role: ClusterConfiguration and
// InitConfiguration for init, JoinConfiguration for the join roles, in the kubeadm API version
// that Cluster API picks for the Kubernetes version.
func kubeadmConfig(in *Input, ver semver.Version) (string, *Error) {
	switch in.Role {
	case RoleInit:
		cluster, err := kubeadmtypes.MarshalClusterConfigurationForVersion(in.ClusterConfiguration, ver, in.ClusterData)
		if err != nil {
			return "", errorf(ErrInvalidInput, "clusterConfiguration", "cannot write kubeadm ClusterConfiguration: %v", err)
		}
		init, err := kubeadmtypes.MarshalInitConfigurationForVersion(in.InitConfiguration, ver)
		if err != nil {
			return "", errorf(ErrInvalidInput, "initConfiguration", "cannot write kubeadm InitConfiguration: %v", err)
		}
		return cluster + kubeadmDocumentSeparator + init, nil
	case RoleControlPlaneJoin, RoleWorkerJoin:
		join, ierr := joinConfigurationFor(in.Role, in.JoinConfiguration)
		if ierr != nil {
			return "", ierr
		}
		out, err := kubeadmtypes.MarshalJoinConfigurationForVersion(join, ver)
		if err != nil {
			return "", errorf(ErrInvalidInput, "joinConfiguration", "cannot write kubeadm JoinConfiguration: %v", err)
		}
		return out, nil
	default:
		return "", errorf(ErrInvalidInput, "role", "unknown role %q", in.Role)
	}
}

// joinConfigurationFor returns a copy of jc adjusted to the role; the caller's object is never
// modified. A worker gets Cluster API's uninitialized taint, which Cluster API removes once it
// has synced the Machine's labels to the Node. A control-plane join gets an (empty)
// controlPlane section if it has none, because that section is what makes `kubeadm join` join
// the control plane; its taints are left alone, since nil (kubeadm's default control-plane
// taint) and empty (no taints) mean different things.
func joinConfigurationFor(role Role, jc *bootstrapv1.JoinConfiguration) (*bootstrapv1.JoinConfiguration, *Error) {
	if jc == nil {
		return nil, errorf(ErrInvalidInput, "joinConfiguration", "a %s join needs a JoinConfiguration", role)
	}
	out := jc.DeepCopy()
	switch role {
	case RoleWorkerJoin:
		if out.ControlPlane != nil {
			return nil, errorf(ErrInvalidInput, "joinConfiguration.controlPlane",
				"a worker must not set joinConfiguration.controlPlane: kubeadm would join it to the control plane")
		}
		taints := withUninitializedTaint(out.NodeRegistration.Taints)
		out.NodeRegistration.Taints = &taints
	case RoleControlPlaneJoin:
		if out.ControlPlane == nil {
			out.ControlPlane = &bootstrapv1.JoinControlPlane{}
		}
	}
	return out, nil
}

// withUninitializedTaint returns the taints plus the uninitialized taint, in a new slice, unless
// a taint with the same key and effect is already there.
func withUninitializedTaint(taints *[]corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	if taints != nil {
		out = slices.Clone(*taints)
	}
	for _, t := range out {
		if t.Key == UninitializedTaintKey && string(t.Effect) == UninitializedTaintEffect {
			return out
		}
	}
	return append(out, corev1.Taint{Key: UninitializedTaintKey, Effect: corev1.TaintEffect(UninitializedTaintEffect)})
}
