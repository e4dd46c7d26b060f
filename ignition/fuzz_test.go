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
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// The fuzz targets of the package (`make fuzz` runs each for FUZZTIME; `go test` runs their
// seeds, in code and in testdata/fuzz/<target>, as unit tests):
//   - FuzzRender: the whole renderer, every role and variant, with every input a user controls;
//   - FuzzButaneMerge (butane_fuzz_test.go): arbitrary Butane through the snippet path, which
//     must never change what the provider writes.

// Bits of FuzzRender's options byte. The two low bits pick the node-name platform.
const (
	fuzzNodeNameMask    = 0b11 // 0: nodeRegistration.name, 1: aws, 2: azure, 3: openstack
	fuzzProviderID      = 1 << 2
	fuzzFileDiscovery   = 1 << 3
	fuzzKubeadmDropin   = 1 << 4 // the user's file goes in kubeadm.service.d, named after filePath
	fuzzPresetDirectory = 1 << 5 // the user's file goes in the preset directory
	fuzzDiscoveryNoCA   = 1 << 6 // file discovery without a CA nor insecure: refused
	fuzzCompress        = 1 << 7 // compression allowed, with a limit most outputs are over: wrapped where the spec allows
)

// fuzzSizeLimit is the user-data limit of inputs with fuzzCompress.
const fuzzSizeLimit = 1024

var fuzzPlatforms = []cabpiv1.MetadataPlatform{"", cabpiv1.MetadataPlatformAWS, cabpiv1.MetadataPlatformAzure, cabpiv1.MetadataPlatformOpenStack}

// fuzzRoles are the roles FuzzRender's role byte picks from (modulo).
var fuzzRoles = []ignition.Role{ignition.RoleWorkerJoin, ignition.RoleControlPlaneJoin, ignition.RoleInit}

// fuzzRenderInput builds FuzzRender's input. It is called twice per case, so the input Render
// was given can be compared with a fresh one: Render must not modify its input.
func fuzzRenderInput(variant cabpiv1.Variant, role ignition.Role, options uint8,
	butane string, strict bool, pre, post, filePath, fileContent, owner, pin, kubernetesVersion string,
) ignition.Input {
	var in ignition.Input
	switch role {
	case ignition.RoleInit:
		in = initInput(variant, kubernetesVersion)
	case ignition.RoleControlPlaneJoin:
		in = controlPlaneJoinInput(variant, kubernetesVersion)
	default:
		in = joinInput(variant, kubernetesVersion)
	}
	in.Butane, in.ButaneStrict, in.IgnitionVersion = butane, strict, pin
	in.PreKubeadmCommands = []string{pre}
	if post != "" {
		in.PostKubeadmCommands = []string{post}
	}
	switch {
	case options&fuzzKubeadmDropin != 0:
		filePath = "/etc/systemd/system/kubeadm.service.d/" + filePath
	case options&fuzzPresetDirectory != 0:
		filePath = "/etc/systemd/system-preset/" + filePath
	}
	in.Files = []ignition.File{{Path: filePath, Content: []byte(fileContent), Mode: 0o600, Owner: owner}}
	if options&fuzzCompress != 0 {
		in.Compress, in.SizeLimit = true, fuzzSizeLimit
	}
	if p := fuzzPlatforms[options&fuzzNodeNameMask]; p != "" {
		in.NodeName = &ignition.NodeNameFromMetadata{Platform: p, ProviderID: options&fuzzProviderID != 0}
	}
	if options&fuzzFileDiscovery != 0 && in.JoinConfiguration != nil {
		cluster := kubeadmv1.KubeConfigCluster{Server: "https://" + testEndpoint, CertificateAuthorityData: []byte(fileContent)}
		if options&fuzzDiscoveryNoCA != 0 {
			cluster.CertificateAuthorityData = nil
		} else if len(fileContent) == 0 {
			cluster.InsecureSkipTLSVerify = ptr.To(true)
		}
		in.JoinConfiguration.Discovery = kubeadmv1.Discovery{File: kubeadmv1.FileDiscovery{
			KubeConfigPath: "/etc/kubernetes/discovery.conf",
			KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{
				Cluster: cluster,
				User:    kubeadmv1.KubeConfigUser{Exec: kubeadmv1.KubeConfigAuthExec{Command: "/opt/bin/token", Args: []string{pre}}},
			},
		}}
	}
	return in
}

// FuzzRender feeds arbitrary Butane, commands, files, owners, node-name options, discovery,
// roles and versions to Render, on both variants. Invariants:
//   - it never panics;
//   - every error is an *ignition.Error with a kind (an input error, never an internal one),
//     and comes with no output;
//   - the input is not modified;
//   - every success is Ignition a node accepts (ignition/v2/config parses it), at the spec
//     version the output reports, one the variant supports, the pinned one when pinned;
//   - the output carries the provider's script, configuration and unit;
//   - rendering is deterministic: the same input gives the same bytes.
func FuzzRender(f *testing.F) {
	const worker, controlPlane, initRole = 0, 1, 2
	// butane, strict, pre, post, filePath, fileContent, owner, pin, kubernetesVersion, role, options
	f.Add(flatcarSnippet, false, "echo pre", "", "/etc/x", "x", "", "", "v1.34.0", uint8(worker), uint8(0))
	f.Add(fcosSnippet, true, "", "echo done", "/etc/kubeadm.yml", "", "", "3.4.0", "v1.30.0", uint8(worker), uint8(0))
	f.Add("variant: flatcar\nversion: 1.1.0\nstorage: {files: [{path: /etc/a, contents: {inline: x}}]}\n", true, "", "", "/etc/a", "", "", "", "1.31", uint8(worker), uint8(0))
	f.Add("variant: fcos\nversion: 1.7.0\n", false, "a\nb", "", "relative", "", "", "3.6.0", "v1.35.0-rc.1", uint8(worker), uint8(0))
	f.Add("{{", false, "", "", "", "", "", "9", "v0", uint8(worker), uint8(0))
	f.Add("variant: flatcar\nversion: 1.0.0\nsystemd: {units: [{name: kubeadm.service}]}\n", false, "", "", "/", "", "", "", "v1.34.0", uint8(worker), uint8(0))
	// Every role, with the options that change the kubeadm configuration and unit.
	f.Add("", false, "systemctl enable --now containerd", "echo ok > /var/log/cabpi", "/etc/cabpi/hello", "hello\n", "500:500", "", "v1.34.0", uint8(initRole), uint8(1|fuzzProviderID))
	f.Add(fcosSnippet, false, "", "", "/etc/cabpi/hello", "hello\n", "core", "3.5.0", "v1.31.0", uint8(controlPlane), uint8(3|fuzzProviderID))
	f.Add("", false, "true", "", "/etc/cabpi/hello", "", "", "", "v1.34.0", uint8(worker), uint8(2))
	f.Add("", false, "true", "", "/etc/cabpi/hello", "ca", "", "", "v1.34.0", uint8(worker), uint8(fuzzFileDiscovery|1|fuzzProviderID))
	f.Add("", false, "", "", "/etc/cabpi/hello", "", "", "", "v1.34.0", uint8(controlPlane), uint8(fuzzFileDiscovery|fuzzDiscoveryNoCA))
	// Drop-ins for kubeadm.service: allowed ones and refused ones, as files and in Butane.
	f.Add("", false, "", "", "10-env.conf", "[Unit]\nAfter=network-online.target\n[Service]\nEnvironment=HTTP_PROXY=http://proxy:3128\n", "", "", "v1.34.0", uint8(worker), uint8(fuzzKubeadmDropin))
	f.Add("", false, "", "", "10-x.conf", "[Service]\nExecStart=\nExecStart=/bin/true\n", "", "", "v1.34.0", uint8(worker), uint8(fuzzKubeadmDropin))
	f.Add("", false, "", "", "10-x.conf", "[Service]\nEnvironment=\"BASH_ENV=/tmp/x\"\n", "", "", "v1.34.0", uint8(initRole), uint8(fuzzKubeadmDropin))
	f.Add(butaneDropin("kubeadm.service", "[Unit]\nAfter=containerd.service\n"), false, "", "", "/etc/x", "", "", "", "v1.34.0", uint8(worker), uint8(0))
	f.Add(butaneDropin("kubeadm.service", "[Unit]\nConditionPathExists=\n"), false, "", "", "/etc/x", "", "", "", "v1.34.0", uint8(controlPlane), uint8(0))
	f.Add("", false, "", "", "10-x.preset", "disable kube*\n", "", "", "v1.34.0", uint8(worker), uint8(fuzzPresetDirectory))
	// Compressed and wrapped, with a snippet Butane compresses too.
	f.Add(flatcarSnippet, false, "echo pre", "", "/etc/cabpi/large", strings.Repeat("line of a large text file\n", 100), "", "", "v1.34.0", uint8(initRole), uint8(fuzzCompress|1|fuzzProviderID))
	f.Add(fcosSnippet, false, "", "", "10-env.conf", "[Service]\nEnvironment=A=1\n", "", "3.0.0", "v1.34.0", uint8(worker), uint8(fuzzCompress|fuzzKubeadmDropin))
	f.Fuzz(func(t *testing.T, butane string, strict bool, pre, post, filePath, fileContent, owner, pin, kubernetesVersion string, roleByte, options uint8) {
		role := fuzzRoles[int(roleByte)%len(fuzzRoles)]
		for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
			build := func() ignition.Input {
				return fuzzRenderInput(variant, role, options, butane, strict, pre, post, filePath, fileContent, owner, pin, kubernetesVersion)
			}
			in := build()
			out, err := ignition.Render(in)
			require.True(t, reflect.DeepEqual(build(), in), "Render modified its input")
			if err != nil {
				requireInputError(t, out, err)
				continue
			}
			requireValidOutput(t, variant, pin, out)
			again, err := ignition.Render(build())
			require.NoError(t, err, "the second render of the same input failed")
			require.True(t, bytes.Equal(out.Data, again.Data), "rendering the same input twice gave different bytes")
		}
	})
}

// requireInputError checks a failed Render: an input error, with a kind and no output.
func requireInputError(t *testing.T, out ignition.Output, err error) {
	t.Helper()
	var ierr *ignition.Error
	require.True(t, errors.As(err, &ierr), "not an input error: %v", err)
	require.NotNil(t, ierr, "a typed nil *ignition.Error")
	require.NotEmpty(t, ierr.Kind, "an input error without a kind: %v", err)
	require.Nil(t, out.Data)
}

// requireValidOutput checks a successful Render: Ignition parses it at the spec version reported,
// which the variant supports (the pinned one when pinned), and the provider's part is there,
// behind the wrapper where there is one, which only a compressed render has.
func requireValidOutput(t *testing.T, variant cabpiv1.Variant, pin string, out ignition.Output) {
	t.Helper()
	_, rpt, err := ignconfig.Parse(out.Data)
	require.NoError(t, err, rpt.String())
	require.Equal(t, out.SpecVersion, specVersion(t, out.Data))
	config, err := ignition.Unwrap(out.Data)
	require.NoError(t, err)
	require.Equal(t, out.Size.Wrapped, !bytes.Equal(config, out.Data), "a wrapper exactly when reported")
	require.Equal(t, len(config), out.Size.UnwrappedBytes)
	require.False(t, out.Size.Wrapped && !out.Size.Compressed, "wrapped without compression allowed")
	require.False(t, out.Size.Wrapped && out.Size.Bytes >= out.Size.UnwrappedBytes, "a wrapper that is not smaller")
	cfg, rpt, err := ignconfig.Parse(config)
	require.NoError(t, err, rpt.String())
	require.Equal(t, out.SpecVersion, specVersion(t, config))
	require.Contains(t, ignition.AllowedIgnitionVersions(variant), out.SpecVersion)
	if pin != "" {
		require.Equal(t, pin, out.SpecVersion, "the pinned version was not emitted")
	}
	require.Equal(t, len(out.Data), out.Size.Bytes)
	for _, p := range []string{ignition.KubeadmConfigPath, ignition.KubeadmScriptPath} {
		require.True(t, slices.ContainsFunc(cfg.Storage.Files, func(f exptypes.File) bool { return f.Path == p }), "%s is missing", p)
	}
	i := slices.IndexFunc(cfg.Systemd.Units, func(u exptypes.Unit) bool { return u.Name == ignition.KubeadmUnitName })
	require.GreaterOrEqual(t, i, 0, "%s is missing", ignition.KubeadmUnitName)
	u := cfg.Systemd.Units[i]
	require.True(t, u.Enabled != nil && *u.Enabled, "%s is not enabled", ignition.KubeadmUnitName)
	require.True(t, u.Mask == nil || !*u.Mask, "%s is masked", ignition.KubeadmUnitName)
	require.NotNil(t, u.Contents, "%s has no contents", ignition.KubeadmUnitName)
}
