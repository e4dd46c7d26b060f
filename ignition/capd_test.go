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
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// capdConfig is what CAPD's Ignition adapter (the quick start's infrastructure) reads of a
// config, with its spec 2.3 field types: it dereferences every file's mode, decodes every
// contents.source, writes every unit's contents to /etc/systemd/system, and has no field for
// spec 3.x append (an array there fails to decode).
type capdConfig struct {
	Storage struct {
		Files []struct {
			Path     string `json:"path"`
			Mode     *int   `json:"mode"`
			Contents struct {
				Source string `json:"source"`
			} `json:"contents"`
			Append json.RawMessage `json:"append"`
		} `json:"files"`
	} `json:"storage"`
	Systemd struct {
		Units []struct {
			Name     string `json:"name"`
			Contents string `json:"contents"`
		} `json:"units"`
	} `json:"systemd"`
}

// The provider's own output, without a user snippet, is readable by CAPD, for every role and
// variant and with every option that adds files or changes the unit (docs/adr/010). CAPD's
// path renders without compression (platform docker, docs/adr/011), whatever the size: a large
// file that would be gzipped with compression allowed stays a plain data URL.
func TestOutputReadableByCAPD(t *testing.T) {
	inputs := map[string]ignition.Input{}
	for name, in := range goldenCases() {
		if in.Butane == "" && in.ContainerLinuxConfig == "" {
			inputs[name] = in
		}
	}
	named := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	named.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS, ProviderID: true}
	inputs["worker node name from metadata"] = named
	fileDiscovery := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	fileDiscovery.JoinConfiguration.Discovery = kubeadmv1.Discovery{File: kubeadmv1.FileDiscovery{
		KubeConfigPath: "/etc/kubernetes/discovery.conf",
		KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{
			Cluster: kubeadmv1.KubeConfigCluster{Server: "https://10.0.0.1:6443", InsecureSkipTLSVerify: ptr.To(true)},
			User:    kubeadmv1.KubeConfigUser{Exec: kubeadmv1.KubeConfigAuthExec{Command: "/opt/bin/token"}},
		},
	}}
	inputs["worker file discovery"] = fileDiscovery
	large := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	large.Files = append(smallFiles(40), ignition.File{Path: "/etc/cabpi/large", Content: textLines(200), Mode: 0o600})
	inputs["worker with large files"] = large

	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			in.Compress, in.SizeLimit = false, 1024 // what configinput gives platform docker, with a limit to tempt a wrapper
			out, err := ignition.Render(in)
			require.NoError(t, err)
			var cfg capdConfig
			require.NoError(t, json.Unmarshal(out.Data, &cfg))
			require.NotEmpty(t, cfg.Storage.Files)
			for _, f := range cfg.Storage.Files {
				assert.NotNil(t, f.Mode, "%s has no mode: CAPD dereferences it", f.Path)
				assert.True(t, strings.HasPrefix(f.Contents.Source, "data:"), "%s is not a data URL", f.Path)
				_, err := decodeDataURL(f.Contents.Source)
				assert.NoError(t, err, f.Path)
				assert.Nil(t, f.Append, "%s appends: CAPD cannot read it", f.Path)
			}
			for _, u := range cfg.Systemd.Units {
				assert.NotEmpty(t, u.Contents, "unit %s has no contents: CAPD would write an empty unit", u.Name)
			}
			assert.NotContains(t, string(out.Data), `"compression"`, "CAPD does not decompress")
			assert.NotContains(t, string(out.Data), `"replace"`, "CAPD does not follow a wrapper")
			assert.False(t, out.Size.Wrapped)
			assert.NotContains(t, string(out.Data), `"dropins"`, "CAPD does not write drop-ins")
		})
	}
}
