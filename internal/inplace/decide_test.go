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
	"testing"

	"github.com/stretchr/testify/assert"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

func sysextSpec(base string) *cabpiv1.IgnitionConfigSpec {
	spec := &cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFlatcar,
		Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}}
	if base != "" {
		spec.Kubernetes.Sysext = &cabpiv1.SysextSource{BaseURL: base}
	}
	return spec
}

func binariesSpec(base string) *cabpiv1.IgnitionConfigSpec {
	spec := &cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS,
		Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}}
	if base != "" {
		spec.Kubernetes.Binaries = &cabpiv1.BinariesSource{BaseURL: base}
	}
	return spec
}

// Every row is one change of a MachineDeployment: what the extension takes, and that it says
// why it declines the rest.
func TestDecide(t *testing.T) {
	const cp = "v1.34.4"
	tests := []struct {
		name             string
		current, desired Side
		controlPlane     string
		want             Verdict
		declinedContains string
	}{
		{name: "sysext: version alone", current: Side{Version: "v1.33.13", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: sysextSpec("")},
			controlPlane: cp, want: Verdict{Version: true}},
		{name: "binaries: patch release", current: Side{Version: "v1.34.3", Config: binariesSpec("")}, desired: Side{Version: "v1.34.4", Config: binariesSpec("")},
			controlPlane: cp, want: Verdict{Version: true}},
		{name: "sysext: mirror alone", current: Side{Version: "v1.34.4", Config: sysextSpec("https://a.example/ext")},
			desired: Side{Version: "v1.34.4", Config: sysextSpec("https://b.example/ext")}, controlPlane: cp, want: Verdict{BaseURL: true}},
		{name: "binaries: mirror back to the default", current: Side{Version: "v1.34.4", Config: binariesSpec("https://a.example/release")},
			desired: Side{Version: "v1.34.4", Config: binariesSpec("")}, controlPlane: cp, want: Verdict{BaseURL: true}},
		{name: "version and mirror", current: Side{Version: "v1.33.13", Config: sysextSpec("https://a.example/ext")},
			desired: Side{Version: "v1.34.4", Config: sysextSpec("https://b.example/ext")}, controlPlane: cp, want: Verdict{Version: true, BaseURL: true}},
		{name: "a distribution's API server", current: Side{Version: "v1.33.13", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: sysextSpec("")},
			controlPlane: "v1.34.4-eks-1", want: Verdict{Version: true}},
		{name: "nothing changed", current: Side{Version: "v1.34.4", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: sysextSpec("")},
			controlPlane: cp, want: Verdict{}},

		{name: "image source", current: Side{Version: "v1.33.13", Config: &cabpiv1.IgnitionConfigSpec{}}, desired: Side{Version: "v1.34.4", Config: &cabpiv1.IgnitionConfigSpec{}},
			controlPlane: cp, declinedContains: `spec.kubernetes.source is "image"`},
		{name: "not an IgnitionConfig", current: Side{Version: "v1.33.13"}, desired: Side{Version: "v1.34.4"},
			controlPlane: cp, declinedContains: "not an IgnitionConfig"},
		{name: "newer than the control plane", current: Side{Version: "v1.34.4", Config: sysextSpec("")}, desired: Side{Version: "v1.35.0", Config: sysextSpec("")},
			controlPlane: cp, declinedContains: "newer than the control plane's v1.34.4"},
		// The skew policy bounds minor versions: a kubelet of the API server's minor with a newer
		// patch is within it.
		{name: "newer patch than the control plane", current: Side{Version: "v1.34.3", Config: sysextSpec("")}, desired: Side{Version: "v1.34.5", Config: sysextSpec("")},
			controlPlane: cp, want: Verdict{Version: true}},
		{name: "control-plane Machines", current: Side{Version: "v1.33.13", Config: sysextSpec(""), ControlPlane: true},
			desired: Side{Version: "v1.34.4", Config: sysextSpec(""), ControlPlane: true}, controlPlane: cp, declinedContains: "control-plane nodes are not updated in place"},
		{name: "control-plane Machines, the mirror alone", current: Side{Version: "v1.34.4", Config: sysextSpec("https://a.example/ext"), ControlPlane: true},
			desired: Side{Version: "v1.34.4", Config: sysextSpec("https://b.example/ext"), ControlPlane: true}, controlPlane: cp, declinedContains: "cluster.x-k8s.io/control-plane"},
		{name: "control plane version unknown", current: Side{Version: "v1.33.13", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: sysextSpec("")},
			declinedContains: "control plane's version is not known"},
		{name: "too far behind the control plane", current: Side{Version: "v1.29.0", Config: sysextSpec("")}, desired: Side{Version: "v1.30.1", Config: sysextSpec("")},
			controlPlane: "v1.34.4", declinedContains: "more than 3 minor versions behind"},
		{name: "downgrade", current: Side{Version: "v1.34.4", Config: sysextSpec("")}, desired: Side{Version: "v1.34.3", Config: sysextSpec("")},
			controlPlane: cp, declinedContains: "does not downgrade"},
		{name: "skips a minor", current: Side{Version: "v1.32.1", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: sysextSpec("")},
			controlPlane: cp, declinedContains: "one minor version at a time"},
		{name: "source changed", current: Side{Version: "v1.33.13", Config: sysextSpec("")}, desired: Side{Version: "v1.34.4", Config: binariesSpec("")},
			controlPlane: cp, declinedContains: "spec.kubernetes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.current, tt.desired, tt.controlPlane)
			assert.Equal(t, tt.want.Version, got.Version, "takes the version")
			assert.Equal(t, tt.want.BaseURL, got.BaseURL, "takes the baseURL")
			if tt.declinedContains == "" {
				assert.Empty(t, got.Declined)
				return
			}
			assert.False(t, got.Version, "a declined version is not taken")
			assert.Contains(t, got.Message(), tt.declinedContains)
		})
	}
}
