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
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// keys resolves references from maps, and records the fields they were asked for.
type keys struct {
	secrets, configMaps map[string]string
	asked               *[]string
}

func (k keys) SecretKey(_ context.Context, field configinput.RefField, ref cabpiv1.KeyReference) ([]byte, error) {
	*k.asked = append(*k.asked, field.String())
	v, ok := k.secrets[ref.Name+"/"+ref.Key]
	if !ok {
		return nil, &configinput.MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key}
	}
	return []byte(v), nil
}

func (k keys) ConfigMapKey(_ context.Context, field configinput.RefField, ref cabpiv1.KeyReference) (string, error) {
	*k.asked = append(*k.asked, field.String())
	v, ok := k.configMaps[ref.Name+"/"+ref.Key]
	if !ok {
		return "", &configinput.MissingReferenceError{Field: field, Kind: "ConfigMap", Name: ref.Name, Key: ref.Key}
	}
	return v, nil
}

// A Container Linux Config is taken inline or from its Secret or ConfigMap key, with its strict
// flag, and a missing reference names the field it is at; Butane the same, apart.
func TestFromSpecResolvesTheDocuments(t *testing.T) {
	const clc = "storage:\n  files:\n    - path: /etc/x\n      mode: 0644\n"
	const butane = "variant: flatcar\nversion: 1.0.0\n"
	ref := func(name string) *cabpiv1.KeyReference {
		return &cabpiv1.KeyReference{Name: name, Key: "config"}
	}
	cases := []struct {
		name       string
		spec       cabpiv1.IgnitionConfigSpec
		wantCLC    string
		wantButane string
		strict     bool
		asked      []string
		missing    string
	}{
		{name: "inline, strict",
			spec:    cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{Inline: clc, Strict: true}},
			wantCLC: clc, strict: true},
		{name: "from a Secret",
			spec: cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{
				ContentFrom: &cabpiv1.ButaneSource{Secret: ref("clc-secret")}}},
			wantCLC: clc, asked: []string{"spec.containerLinuxConfig.contentFrom.secret"}},
		{name: "from a ConfigMap",
			spec: cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{
				ContentFrom: &cabpiv1.ButaneSource{ConfigMap: ref("clc-cm")}}},
			wantCLC: clc, asked: []string{"spec.containerLinuxConfig.contentFrom.configMap"}},
		{name: "from a missing ConfigMap",
			spec: cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{
				ContentFrom: &cabpiv1.ButaneSource{ConfigMap: ref("gone")}}},
			asked: []string{"spec.containerLinuxConfig.contentFrom.configMap"}, missing: "spec.containerLinuxConfig.contentFrom.configMap"},
		{name: "Butane from a ConfigMap",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{
				ContentFrom: &cabpiv1.ButaneSource{ConfigMap: ref("butane-cm")}}},
			wantButane: butane, asked: []string{"spec.butane.contentFrom.configMap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			res := keys{
				secrets:    map[string]string{"clc-secret/config": clc},
				configMaps: map[string]string{"clc-cm/config": clc, "butane-cm/config": butane},
				asked:      &asked,
			}
			in, err := configinput.FromSpec(context.Background(), &tc.spec, ignition.RoleWorkerJoin, "v1.34.0", res)
			assert.Equal(t, tc.asked, asked)
			if tc.missing != "" {
				var missing *configinput.MissingReferenceError
				require.ErrorAs(t, err, &missing)
				assert.Equal(t, tc.missing, missing.Field.String())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantCLC, in.ContainerLinuxConfig)
			assert.Equal(t, tc.strict, in.ContainerLinuxConfigStrict)
			assert.Equal(t, tc.wantButane, in.Butane)
		})
	}
}

// Offline (cabpi render, admission) a Container Linux Config in a Secret or ConfigMap cannot be
// read, and saying so beats rendering without it; a file's Secret is a placeholder.
func TestOfflineCannotReadReferencedDocuments(t *testing.T) {
	ref := &cabpiv1.KeyReference{Name: "clc", Key: "config"}
	for field, from := range map[string]*cabpiv1.ButaneSource{
		"spec.containerLinuxConfig.contentFrom.secret":    {Secret: ref},
		"spec.containerLinuxConfig.contentFrom.configMap": {ConfigMap: ref},
	} {
		t.Run(field, func(t *testing.T) {
			spec := &cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{ContentFrom: from}}
			_, err := configinput.Offline(context.Background(), spec, ignition.RoleWorkerJoin, "v1.34.0", configinput.OfflineResolver{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), field+": rendering offline cannot read")
			assert.Contains(t, err.Error(), "put the Container Linux Config inline to preview it")
		})
	}
}

// spec.kubernetes.digestsFrom is read from its Secret or ConfigMap key into the input's user
// digests; a list that does not parse is a finding at the field, naming the object and the line;
// a missing object names the field; an offline resolver stands the digests in, or reads the
// list it was given (cabpi render --digests).
func TestFromSpecReadsTheDigests(t *testing.T) {
	sum := strings.Repeat("a", 64)
	list := sum + "  v1.37.0/bin/linux/amd64/kubelet\n"
	from := func(secret bool, name string) cabpiv1.IgnitionConfigSpec {
		ref := &cabpiv1.KeyReference{Name: name, Key: "SHA256SUMS"}
		d := &cabpiv1.DigestsSource{ConfigMap: ref}
		if secret {
			d = &cabpiv1.DigestsSource{Secret: ref}
		}
		return cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, DigestsFrom: d}}
	}
	res := keys{secrets: map[string]string{"s/SHA256SUMS": list}, configMaps: map[string]string{"c/SHA256SUMS": list, "bad/SHA256SUMS": "not a list\n"}, asked: &[]string{}}
	for _, secret := range []bool{true, false} {
		name := map[bool]string{true: "s", false: "c"}[secret]
		spec := from(secret, name)
		in, err := configinput.FromSpec(t.Context(), &spec, ignition.RoleWorkerJoin, "v1.37.0", res)
		require.NoError(t, err)
		assert.Empty(t, in.Findings)
		assert.Equal(t, nodelayout.Digests{"v1.37.0/bin/linux/amd64/kubelet": sum}, in.KubernetesDigests.User)
		assert.False(t, in.KubernetesDigests.StandIn)
	}
	assert.Equal(t, []string{"spec.kubernetes.digestsFrom.secret", "spec.kubernetes.digestsFrom.configMap"}, *res.asked)

	spec := from(false, "bad")
	in, err := configinput.FromSpec(t.Context(), &spec, ignition.RoleWorkerJoin, "v1.37.0", res)
	require.NoError(t, err)
	require.Len(t, in.Findings, 1)
	assert.Equal(t, ignition.At(ignition.PartKubernetes, ignition.KubernetesDigestsFrom), in.Findings[0].Place)
	assert.Contains(t, in.Findings[0].Message, "ConfigMap bad key SHA256SUMS is not a digest list: line 1")

	spec = from(true, "gone")
	_, err = configinput.FromSpec(t.Context(), &spec, ignition.RoleWorkerJoin, "v1.37.0", res)
	var missing *configinput.MissingReferenceError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, `spec.kubernetes.digestsFrom.secret: Secret "gone" not found`, err.Error())

	var warn strings.Builder
	spec = from(false, "c")
	in, err = configinput.FromSpec(t.Context(), &spec, ignition.RoleWorkerJoin, "v1.37.0", configinput.OfflineResolver{Warn: &warn})
	require.NoError(t, err)
	assert.True(t, in.KubernetesDigests.StandIn)
	assert.Contains(t, warn.String(), "spec.kubernetes.digestsFrom is not read offline")
	in, err = configinput.FromSpec(t.Context(), &spec, ignition.RoleWorkerJoin, "v1.37.0", configinput.OfflineResolver{Digests: []byte(list)})
	require.NoError(t, err)
	assert.False(t, in.KubernetesDigests.StandIn)
	assert.Equal(t, sum, in.KubernetesDigests.User["v1.37.0/bin/linux/amd64/kubelet"])
}
