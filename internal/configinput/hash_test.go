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

package configinput_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// The digest of the inputs is stable for the same inputs, and changes with each input that
// shapes the data: the spec, referenced content, the Cluster's facts, the version.
func TestInputsHash(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/a", Content: "a"}}}
	build := func(spec *cabpiv1.IgnitionConfigSpec, version string, mutate func(*configinput.Cluster)) string {
		t.Helper()
		cluster := configinput.Placeholders(spec, ignition.RoleWorkerJoin)
		if mutate != nil {
			mutate(&cluster)
		}
		in, err := configinput.Build(context.Background(), spec, ignition.RoleWorkerJoin, version, cluster, configinput.OfflineResolver{})
		require.NoError(t, err)
		h, err := configinput.InputsHash(in)
		require.NoError(t, err)
		return h
	}
	base := build(spec, "v1.34.0", nil)
	assert.True(t, strings.HasPrefix(base, "sha256:"))
	assert.Len(t, base, len("sha256:")+64)
	assert.Equal(t, base, build(spec.DeepCopy(), "v1.34.0", nil), "the same inputs, the same digest")

	changed := spec.DeepCopy()
	changed.Files[0].Content = "b"
	secretFile := spec.DeepCopy()
	secretFile.Files[0] = cabpiv1.File{Path: "/etc/a", ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "s", Key: "k"}}}
	others := map[string]string{
		"spec":                   build(changed, "v1.34.0", nil),
		"referenced content":     build(secretFile, "v1.34.0", nil),
		"Kubernetes version":     build(spec, "v1.33.0", nil),
		"control-plane endpoint": build(spec, "v1.34.0", func(c *configinput.Cluster) { c.ControlPlaneEndpoint = "other.invalid:6443" }),
		"cluster CA":             build(spec, "v1.34.0", func(c *configinput.Cluster) { c.CACertHashes = []string{"sha256:" + strings.Repeat("1", 64)} }),
		"join token":             build(spec, "v1.34.0", func(c *configinput.Cluster) { c.JoinToken = "zyxwvu.0123456789abcdef" }),
	}
	for what, h := range others {
		assert.NotEqual(t, base, h, "a change of the %s changes the digest", what)
	}
}

// References names every object a spec reads content from, once each.
func TestReferences(t *testing.T) {
	ref := func(name string) cabpiv1.KeyReference { return cabpiv1.KeyReference{Name: name, Key: "k"} }
	cm := ref("butane-cm")
	spec := &cabpiv1.IgnitionConfigSpec{
		Butane:               cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{ConfigMap: &cm}},
		ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{ContentFrom: &cabpiv1.ButaneSource{Secret: &cabpiv1.KeyReference{Name: "clc", Key: "k"}}},
		Files: []cabpiv1.File{
			{Path: "/a", Content: "inline"},
			{Path: "/b", ContentFrom: &cabpiv1.FileSource{Secret: ref("files")}},
			{Path: "/c", ContentFrom: &cabpiv1.FileSource{Secret: ref("files")}},
		},
		Users: []cabpiv1.User{{Name: "core", PasswordHashFrom: &cabpiv1.FileSource{Secret: ref("passwords")}}},
	}
	assert.Equal(t, []configinput.Reference{
		{Kind: configinput.ConfigMapKind, Name: "butane-cm"},
		{Kind: configinput.SecretKind, Name: "clc"},
		{Kind: configinput.SecretKind, Name: "files"},
		{Kind: configinput.SecretKind, Name: "passwords"},
	}, configinput.References(spec))
	assert.Empty(t, configinput.References(&cabpiv1.IgnitionConfigSpec{}))
}
