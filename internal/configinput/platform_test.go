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
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// The infrastructure kinds of the known providers name their platform; spec.platform wins over
// the kind; anything else is not known.
func TestEffectivePlatform(t *testing.T) {
	kinds := map[string]cabpiv1.Platform{
		"AWSMachine": "aws", "AWSMachinePool": "aws", "AWSManagedMachinePool": "aws",
		"AzureMachine": "azure", "AzureMachinePool": "azure",
		"GCPMachine":    "gcp",
		"HCloudMachine": "hetzner", "HetznerBareMetalMachine": "hetzner",
		"OpenStackMachine": "openstack",
		"VSphereMachine":   "vsphere", "VSphereVM": "vsphere",
		"DockerMachine": "docker", "DockerMachinePool": "docker", "DevMachine": "docker",
		"":                             "",
		"GenericInfrastructureMachine": "",
		"dockermachine":                "",
	}
	for kind, want := range kinds {
		assert.Equal(t, want, configinput.PlatformForKind(kind), kind)
		assert.Equal(t, want, configinput.EffectivePlatform(&cabpiv1.IgnitionConfigSpec{}, kind), kind)
		spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformGCP}
		assert.Equal(t, cabpiv1.PlatformGCP, configinput.EffectivePlatform(spec, kind), "spec.platform wins over %s", kind)
	}
}

// The limits are the platforms' raw user-data limits; docker and unknown platforms have none,
// and only docker is never compressed.
func TestPlatformLimits(t *testing.T) {
	cases := []struct {
		platform   cabpiv1.Platform
		limit      int
		compressed bool
	}{
		{cabpiv1.PlatformAWS, 16384, true},
		{cabpiv1.PlatformHetzner, 32768, true},
		{cabpiv1.PlatformOpenStack, 49149, true}, // 65,535 characters once base64-encoded (Nova)
		{cabpiv1.PlatformAzure, 65535, true},
		{cabpiv1.PlatformVSphere, 65536, true},
		{cabpiv1.PlatformGCP, 262144, true},
		{cabpiv1.PlatformDocker, 0, false},
		{"", 0, true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.limit, configinput.UserDataLimit(tc.platform), tc.platform)
		assert.Equal(t, tc.compressed, configinput.Compressible(tc.platform), tc.platform)
	}
	assert.Len(t, configinput.Platforms(), len(cases)-1, "every platform of spec.platform has a row")
	for _, p := range configinput.Platforms() {
		got, err := configinput.ParsePlatform(string(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := configinput.ParsePlatform("AWS")
	assert.ErrorContains(t, err, "aws, azure, gcp, hetzner, openstack, vsphere, docker")
}

// Build gives the renderer the platform's compression and limit, from spec.platform or the
// owner's infrastructure kind.
func TestBuildAppliesPlatform(t *testing.T) {
	cases := []struct {
		name     string
		platform cabpiv1.Platform
		kind     string
		compress bool
		limit    int
	}{
		{"DockerMachine", "", "DockerMachine", false, 0},
		{"AWSMachine", "", "AWSMachine", true, 16384},
		{"spec.platform docker over AWSMachine", cabpiv1.PlatformDocker, "AWSMachine", false, 0},
		{"spec.platform openstack over DockerMachine", cabpiv1.PlatformOpenStack, "DockerMachine", true, 49149},
		{"unknown kind", "", "MetalMachine", true, 0},
		{"nothing known", "", "", true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &cabpiv1.IgnitionConfigSpec{Platform: tc.platform}
			cluster := configinput.Placeholders(spec, ignition.RoleWorkerJoin)
			cluster.Delivery = configinput.Delivery{Kind: tc.kind}
			in, err := configinput.Build(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, cluster, configinput.OfflineResolver{})
			require.NoError(t, err)
			assert.Equal(t, tc.compress, in.Compress)
			assert.Equal(t, tc.limit, in.SizeLimit)
		})
	}
}

// What CAPD gets (its DockerMachine kind, or spec.platform docker) is never compressed, even
// where every other platform's data would be: compression is not the default CAPD inherits.
func TestDockerGetsUncompressedData(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/cabpi/large", Content: strings.Repeat("a line of a large text file\n", 300)}}}
	render := func(spec *cabpiv1.IgnitionConfigSpec, kind string) ignition.Output {
		t.Helper()
		cluster := configinput.Placeholders(spec, ignition.RoleWorkerJoin)
		cluster.Delivery = configinput.Delivery{Kind: kind}
		in, err := configinput.Build(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, cluster, configinput.OfflineResolver{})
		require.NoError(t, err)
		out, err := ignition.Render(in)
		require.NoError(t, err)
		return out
	}
	capd := render(spec, "DockerMachine")
	assert.NotContains(t, string(capd.Data), "compression")
	assert.False(t, capd.Size.Compressed)

	for _, kind := range []string{"AWSMachine", "VSphereMachine", ""} {
		other := render(spec, kind)
		assert.Contains(t, string(other.Data), `"compression":"gzip"`, kind)
		assert.NotEqual(t, string(capd.Data), string(other.Data), kind)
		assert.Less(t, other.Size.Bytes, capd.Size.Bytes, kind)
	}

	pinned := spec.DeepCopy()
	pinned.Platform = cabpiv1.PlatformDocker
	assert.Equal(t, string(capd.Data), string(render(pinned, "AWSMachine").Data), "spec.platform docker is CAPD's path whatever the kind")
}

// Over the limit, the message names the size, the limit, the platform, what compression did,
// and what to do; within it, there is none.
func TestOverPlatformLimit(t *testing.T) {
	within := ignition.Output{SpecVersion: "3.3.0", Size: ignition.SizeReport{Bytes: 16384, Limit: 16384}}
	assert.Empty(t, configinput.OverPlatformLimit(within, cabpiv1.PlatformAWS))
	noLimit := ignition.Output{SpecVersion: "3.3.0", Size: ignition.SizeReport{Bytes: 1 << 20}}
	assert.Empty(t, configinput.OverPlatformLimit(noLimit, ""))

	cases := []struct {
		name     string
		out      ignition.Output
		platform cabpiv1.Platform
		contains []string
		absent   []string
	}{
		{"wrapped on aws", ignition.Output{SpecVersion: "3.3.0", Size: ignition.SizeReport{Bytes: 20000, Limit: 16384, Compressed: true, Wrapped: true, UnwrappedBytes: 90000}},
			cabpiv1.PlatformAWS,
			[]string{"20000 bytes", "16384-byte", "platform aws", "wrapped", "90000 bytes", "Nothing was cut", "smaller", "contents.source", "S3", "ClusterObjectStore"}, nil},
		{"compressed at 3.0.0", ignition.Output{SpecVersion: "3.0.0", Size: ignition.SizeReport{Bytes: 70000, Limit: 65536, Compressed: true, UnwrappedBytes: 70000}},
			cabpiv1.PlatformAzure,
			[]string{"70000 bytes", "65536-byte", "platform azure", "gzipped", "ignitionVersion to 3.1.0", "contents.source"}, []string{"S3"}},
		{"compressed, wrapper not smaller", ignition.Output{SpecVersion: "3.4.0", Size: ignition.SizeReport{Bytes: 40000, Limit: 32768, Compressed: true, UnwrappedBytes: 40000}},
			cabpiv1.PlatformHetzner,
			[]string{"40000 bytes", "32768-byte", "platform hetzner", "gzipped", "would not be smaller"}, nil},
		{"not compressed", ignition.Output{SpecVersion: "3.4.0", Size: ignition.SizeReport{Bytes: 40000, Limit: 32768, UnwrappedBytes: 40000}},
			cabpiv1.PlatformHetzner,
			[]string{"40000 bytes", "not compressed"}, []string{"wrapped"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := configinput.OverPlatformLimit(tc.out, tc.platform)
			for _, s := range tc.contains {
				assert.Contains(t, msg, s)
			}
			for _, s := range tc.absent {
				assert.NotContains(t, msg, s)
			}
		})
	}

	// A rendered config that even compression cannot bring under AWS's limit.
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 24<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformAWS,
		Files: []cabpiv1.File{{Path: "/opt/blob", ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "blob", Key: "data"}}}}}
	in, err := configinput.Offline(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, fixedSecret(random))
	require.NoError(t, err)
	out, err := ignition.Render(in)
	require.NoError(t, err)
	require.True(t, out.Size.OverLimit())
	msg := configinput.OverPlatformLimit(out, configinput.EffectivePlatform(spec, ""))
	assert.Contains(t, msg, fmt.Sprintf("%d bytes", out.Size.Bytes))
	assert.Contains(t, msg, "16384-byte user-data limit of platform aws")
}

// fixedSecret resolves every Secret key to data.
type fixedSecret []byte

func (f fixedSecret) SecretKey(context.Context, configinput.RefField, cabpiv1.KeyReference) ([]byte, error) {
	return f, nil
}

func (f fixedSecret) ConfigMapKey(context.Context, configinput.RefField, cabpiv1.KeyReference) (string, error) {
	return "", fmt.Errorf("no ConfigMaps")
}

// The Secret limit applies to what is stored: a config over 1 MiB whose wrapper fits is stored.
func TestDataTooLargeWeighsTheStoredData(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n")
	for i := range 6500 {
		fmt.Fprintf(&doc, "    - path: /etc/cabpi/conf.d/%05d.conf\n      contents:\n        inline: \"[unit-%05d]\\nenabled = true\\nweight = 10\\nowner = team-%d\\n\"\n", i, i, i%7)
	}
	spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformGCP, Butane: cabpiv1.ButaneSpec{Inline: doc.String()}}
	in, err := configinput.Offline(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion, configinput.OfflineResolver{})
	require.NoError(t, err)
	out, err := ignition.Render(in)
	require.NoError(t, err)
	require.Greater(t, out.Size.UnwrappedBytes, configinput.MaxDataBytes, "the config itself does not fit a Secret")
	require.True(t, out.Size.Wrapped)
	assert.Empty(t, configinput.DataTooLarge(out.Size.Bytes), "its wrapper does")
	assert.False(t, out.Size.OverLimit(), "nor GCP's 256 KiB: %d bytes", out.Size.Bytes)
}

// A node named from a metadata service must run on a platform that has it: the platform's own
// service is fine, another (or a platform with none cabpi reads) is refused at
// nodeName.fromMetadata, whether the platform is stated or comes from the infrastructure kind.
func TestNodeNameFromMetadataOfThePlatform(t *testing.T) {
	for _, tc := range []struct {
		platform cabpiv1.Platform
		kind     string
		from     cabpiv1.MetadataPlatform
		bad      bool
	}{
		{cabpiv1.PlatformAzure, "", cabpiv1.MetadataPlatformAWS, true},
		{cabpiv1.PlatformGCP, "", cabpiv1.MetadataPlatformOpenStack, true},
		{"", "AzureMachine", cabpiv1.MetadataPlatformAWS, true},
		{cabpiv1.PlatformAWS, "", cabpiv1.MetadataPlatformAWS, false},
		{cabpiv1.PlatformAzure, "", cabpiv1.MetadataPlatformAzure, false},
		{cabpiv1.PlatformOpenStack, "", cabpiv1.MetadataPlatformOpenStack, false},
		{"", "", cabpiv1.MetadataPlatformAWS, false}, // platform not known
	} {
		t.Run(fmt.Sprintf("%s%s-%s", tc.platform, tc.kind, tc.from), func(t *testing.T) {
			spec := &cabpiv1.IgnitionConfigSpec{Platform: tc.platform, NodeName: &cabpiv1.NodeNameSource{FromMetadata: tc.from}}
			_, err := configinput.RenderOfflineFor(context.Background(), spec, ignition.RoleWorkerJoin, configinput.DefaultKubernetesVersion,
				configinput.Delivery{Kind: tc.kind}, nil)
			if !tc.bad {
				require.NoError(t, err)
				return
			}
			var ierr *ignition.Error
			require.ErrorAs(t, err, &ierr)
			assert.Equal(t, ignition.At(ignition.PartNodeName, ignition.NodeNamePlatform), ierr.Place)
			assert.Equal(t, string(tc.from), ierr.Value)
		})
	}
}
