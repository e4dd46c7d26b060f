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

package ignition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// What first boot refuses (and source image) cannot be updated in place either; the rest can.
func TestCheckInPlace(t *testing.T) {
	cases := []struct {
		name    string
		spec    cabpiv1.KubernetesSpec
		version string
		// wantErr is the error's kind and what its message says; "" for none.
		wantKind ErrorKind
		wantMsg  string
	}{
		{name: "sysext from the bakery", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, version: "v1.34.4"},
		{name: "sysext arm64 from a mirror", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: cabpiv1.ArchitectureARM64,
			Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext/"}}, version: "v1.33.2"},
		{name: "binaries", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}, version: "v1.34.4"},
		{name: "binaries with kubectl from a mirror, a pre-release", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Arch: cabpiv1.ArchitectureARM64, Binaries: &cabpiv1.BinariesSource{BaseURL: "http://mirror.example:8080/release", Kubectl: true}},
			version: "v1.35.0-rc.1"},
		{name: "image", spec: cabpiv1.KubernetesSpec{}, version: "v1.34.4", wantKind: ErrInvalidInput, wantMsg: "nothing to swap in place"},
		{name: "image, named", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage}, version: "v1.34.4",
			wantKind: ErrInvalidInput, wantMsg: "nothing to swap in place"},
		{name: "sysext of a pre-release", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, version: "v1.35.0-rc.1",
			wantKind: ErrUnsupportedKubernetesVersion, wantMsg: "not a release the sysext layout has"},
		{name: "binaries with build metadata", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}, version: "v1.34.0+vendor.1",
			wantKind: ErrUnsupportedKubernetesVersion, wantMsg: "not a version the Kubernetes release layout has"},
		{name: "a base URL with a query", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/r?sig=secret"}}, version: "v1.34.4",
			wantKind: ErrInvalidInput, wantMsg: "has a query"},
		{name: "an unknown source", spec: cabpiv1.KubernetesSpec{Source: "rpm"}, version: "v1.34.4", wantKind: ErrInvalidInput, wantMsg: "not image, sysext or binaries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInPlace(tc.spec, tc.version)
			if tc.wantKind == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantKind)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, e.Message, tc.wantMsg)
			assert.NotContains(t, err.Error(), "secret", "a URL that may carry credentials is not repeated")
		})
	}
}
