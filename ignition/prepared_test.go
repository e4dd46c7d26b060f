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

package ignition_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// WithJoinToken must give exactly the bytes a whole render with that token gives, for every
// form the output takes: plain, gzipped contents, a snippet, metadata node names, and the
// compressed wrapper over a size limit.
func TestPreparedWithJoinTokenEqualsRender(t *testing.T) {
	const realToken = "q8b2mz.x7c4v9n1m3k5j8h2"
	snippet := "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n  - path: /etc/motd\n    contents:\n      inline: " +
		strings.Repeat("hello ", 400) + "\n"
	cases := map[string]func(*ignition.Input){
		"flatcar worker":      func(*ignition.Input) {},
		"uncompressed (CAPD)": func(in *ignition.Input) { in.Compress = false },
		"compressed":          func(in *ignition.Input) { in.Compress = true },
		"control plane": func(in *ignition.Input) {
			*in = controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.Compress = true
		},
		"snippet": func(in *ignition.Input) { in.Butane, in.Compress = snippet, true },
		"node name from metadata": func(in *ignition.Input) {
			in.NodeName = &ignition.NodeNameFromMetadata{Platform: "aws", ProviderID: true}
		},
		"wrapped over a limit": func(in *ignition.Input) { in.Butane, in.Compress, in.SizeLimit = snippet, true, 1500 },
		"fcos":                 func(in *ignition.Input) { in.Variant = cabpiv1.VariantFCOS; in.Compress = true },
		"kubernetes sysext with sysupdate": func(in *ignition.Input) {
			in.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}
			in.Compress = true
		},
		"kubernetes binaries": func(in *ignition.Input) {
			in.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{Kubectl: true}}
			in.Compress = true
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			mutate(&in)
			p, err := ignition.Prepare(in)
			require.NoError(t, err)
			placeholderRender, err := ignition.Render(in)
			require.NoError(t, err)
			assert.Equal(t, string(placeholderRender.Data), string(p.Output().Data), "Prepare renders as Render does")

			got, err := p.WithJoinToken(realToken)
			require.NoError(t, err)
			in.JoinConfiguration = in.JoinConfiguration.DeepCopy()
			in.JoinConfiguration.Discovery.BootstrapToken.Token = realToken
			want, err := ignition.Render(in)
			require.NoError(t, err)
			require.Equal(t, string(want.Data), string(got.Data))
			assert.Equal(t, want.Size, got.Size)
			assert.NotEqual(t, string(p.Output().Data), string(got.Data), "the token changed the data")
			assert.Equal(t, strings.HasPrefix(name, "wrapped"), got.Size.Wrapped, "the wrapper case is wrapped, no other")
			files, err := ignition.ReadFiles(got.Data)
			require.NoError(t, err)
			assert.Contains(t, string(files[ignition.KubeadmConfigPath]), realToken)
		})
	}
}

func TestPreparedWithJoinTokenRefusesBadTokens(t *testing.T) {
	p, err := ignition.Prepare(joinInput(cabpiv1.VariantFlatcar, "v1.34.0"))
	require.NoError(t, err)
	_, err = p.WithJoinToken("not-a-token")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "not-a-token", "a token is never echoed")

	p, err = ignition.Prepare(initInput(cabpiv1.VariantFlatcar, "v1.34.0"))
	require.NoError(t, err)
	_, err = p.WithJoinToken("q8b2mz.x7c4v9n1m3k5j8h2")
	assert.Error(t, err, "kubeadm init has no join token")
}
