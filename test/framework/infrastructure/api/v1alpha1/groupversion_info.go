// Package v1alpha1 is the API of the real-node test infrastructure provider: NspawnCluster,
// NspawnMachine and NspawnMachineTemplate, which follow Cluster API's infrastructure contract
// (v1beta2) and stand for a cloud whose instances are systemd-nspawn machines on the suite's
// bridge (docs/nodes-in-tests.md). Test code only: it is never shipped.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group version of the test infrastructure kinds.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
