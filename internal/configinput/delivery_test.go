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
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// The limit follows how the machine stores the data: CAPA's S3 (ClusterObjectStore) has none,
// its UnencryptedUserData is EC2's 16 KiB, Azure's custom data 65,535 bytes, GCP's metadata value
// 256 KiB. A Fedora CoreOS config behind CAPA's Ignition 2.x stub is refused, naming
// spec.ignition.version; Flatcar reads spec 2 and is not.
func TestDeliveryDecidesLimit(t *testing.T) {
	cases := []struct {
		name    string
		machine string // the infrastructure object, YAML
		variant cabpiv1.Variant
		storage configinput.Storage
		stub    string
		limit   int
		refused bool
	}{
		{name: "AWSMachine without spec.ignition: S3 and CAPA's 2.3 stub, Flatcar", variant: cabpiv1.VariantFlatcar,
			machine: "kind: AWSMachine\nmetadata: {name: m}\nspec: {instanceType: t3.large}",
			storage: configinput.StorageObjectStore, stub: "2.3", limit: 0},
		{name: "AWSMachine without spec.ignition, Fedora CoreOS", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachine\nmetadata: {name: m}\nspec: {instanceType: t3.large}",
			storage: configinput.StorageObjectStore, stub: "2.3", refused: true},
		{name: "AWSMachine S3 with version 2.3, Fedora CoreOS", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachine\nmetadata: {name: m}\nspec: {ignition: {version: \"2.3\", storageType: ClusterObjectStore}}",
			storage: configinput.StorageObjectStore, stub: "2.3", refused: true},
		{name: "AWSMachine S3 with version 3.4, Fedora CoreOS", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachine\nmetadata: {name: m}\nspec: {ignition: {version: \"3.4\", storageType: ClusterObjectStore}}",
			storage: configinput.StorageObjectStore, stub: "3.4", limit: 0},
		{name: "AWSMachine unencrypted user data, Fedora CoreOS", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachine\nmetadata: {name: m}\nspec: {ignition: {version: \"2.3\", storageType: UnencryptedUserData}}",
			storage: configinput.StorageUserData, limit: 16384},
		{name: "AWSMachineTemplate S3 with version 3.4", variant: cabpiv1.VariantFlatcar,
			machine: "kind: AWSMachineTemplate\nmetadata: {name: t}\nspec: {template: {spec: {ignition: {version: \"3.4\"}}}}",
			storage: configinput.StorageObjectStore, stub: "3.4", limit: 0},
		{name: "AWSMachinePool without spec.ignition: user data (CAPA's pool default)", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachinePool\nmetadata: {name: p}\nspec: {minSize: 1}",
			storage: configinput.StorageUserData, limit: 16384},
		{name: "AWSMachinePool S3 with the default version, Fedora CoreOS", variant: cabpiv1.VariantFCOS,
			machine: "kind: AWSMachinePool\nmetadata: {name: p}\nspec: {ignition: {storageType: ClusterObjectStore}}",
			storage: configinput.StorageObjectStore, stub: "2.3", refused: true},
		{name: "AzureMachine", variant: cabpiv1.VariantFCOS,
			machine: "kind: AzureMachine\nmetadata: {name: a}\nspec: {vmSize: Standard_D2s_v3}", limit: 65535},
		{name: "GCPMachine", variant: cabpiv1.VariantFlatcar,
			machine: "kind: GCPMachine\nmetadata: {name: g}\nspec: {instanceType: n2-standard-2}", limit: 262144},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(tc.machine), &obj.Object))
			d, err := configinput.DeliveryOf(obj)
			require.NoError(t, err)
			assert.Equal(t, tc.storage, d.Storage)
			assert.Equal(t, tc.stub, d.StubIgnitionVersion)

			spec := &cabpiv1.IgnitionConfigSpec{Variant: tc.variant}
			cluster := configinput.Placeholders(spec, ignition.RoleWorkerJoin)
			cluster.Delivery = d
			in, err := configinput.Build(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, cluster, configinput.OfflineResolver{})
			if tc.refused {
				var derr *configinput.DeliveryError
				require.True(t, errors.As(err, &derr), "want a DeliveryError, got %v", err)
				assert.Contains(t, derr.Error(), "spec.ignition.version")
				assert.Contains(t, derr.Error(), obj.GetKind()+" "+obj.GetName())
				assert.Contains(t, derr.Error(), `"2.3"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.limit, in.SizeLimit)
			assert.True(t, in.Compress)
		})
	}
}

// A storage type CAPA does not know is an error, not a guess.
func TestDeliveryOfUnknownStorage(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"kind": "AWSMachine", "metadata": map[string]any{"name": "m"},
		"spec": map[string]any{"ignition": map[string]any{"storageType": "Floppy"}},
	}}
	_, err := configinput.DeliveryOf(obj)
	assert.ErrorContains(t, err, `spec.ignition.storageType "Floppy"`)
}

// Data over EC2's 16 KiB that S3 holds whole: wrapped and over the limit as user data, stored
// as it is (no wrapper, no warning) behind CAPA's stub.
func TestObjectStoreHoldsLargeData(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFlatcar}
	for i := range 40 {
		spec.Files = append(spec.Files, cabpiv1.File{Path: fmt.Sprintf("/etc/cabpi/random-%02d", i), Content: randomText(t, 600, uint64(i))})
	}
	render := func(d configinput.Delivery) ignition.Output {
		t.Helper()
		cluster := configinput.Placeholders(spec, ignition.RoleWorkerJoin)
		cluster.Delivery = d
		in, err := configinput.Build(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, cluster, configinput.OfflineResolver{})
		require.NoError(t, err)
		out, err := ignition.Render(in)
		require.NoError(t, err)
		return out
	}
	userData := render(configinput.Delivery{Kind: "AWSMachine", Storage: configinput.StorageUserData})
	assert.True(t, userData.Size.OverLimit(), "%d bytes", userData.Size.Bytes)
	assert.NotEmpty(t, configinput.OverPlatformLimit(userData, cabpiv1.PlatformAWS))
	s3 := render(configinput.Delivery{Kind: "AWSMachine", Storage: configinput.StorageObjectStore, StubIgnitionVersion: "3.4"})
	assert.False(t, s3.Size.OverLimit())
	assert.False(t, s3.Size.Wrapped)
	assert.Zero(t, s3.Size.Limit)
	assert.Greater(t, s3.Size.Bytes, 16384)
	assert.Empty(t, configinput.OverPlatformLimit(s3, cabpiv1.PlatformAWS))
}

// randomText is n bytes of base64 text from a seeded source: it does not compress much, and the
// test sees the same bytes on every run.
func randomText(t *testing.T, n int, seed uint64) string {
	t.Helper()
	raw := make([]byte, n*3/4)
	rng := rand.New(rand.NewPCG(seed, 27))
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return base64.StdEncoding.EncodeToString(raw)
}
