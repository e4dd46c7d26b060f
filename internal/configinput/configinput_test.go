package configinput_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
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
