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
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// KubeadmConfig's append, users and verbosity, as Ignition carries them: an appended file keeps
// what the image has (the real engine appends, creating it when missing), users are
// passwd.users with every field set, and verbosity is kubeadm's --v in the script.
func TestKubeadmConfigParityFields(t *testing.T) {
	for _, compress := range []bool{false, true} {
		in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
		in.Compress = compress
		in.Files = []ignition.File{
			{Path: "/etc/hosts", Content: []byte("10.0.0.1 api.example\n"), Mode: 0o644, Append: true},
			{Path: "/etc/motd", Content: []byte("whole\n"), Mode: 0o644},
		}
		in.Users = []ignition.User{{
			Name: "ops", Gecos: "Operations", HomeDir: "/home/ops", Shell: "/bin/bash", PrimaryGroup: "ops",
			Groups: []string{"sudo", "docker"}, PasswordHash: "$6$salt$hash", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA ops@example"},
		}}
		five := int32(5)
		in.Verbosity = &five

		out, err := ignition.Render(in)
		require.NoError(t, err)
		cfg, _, err := ignconfig.Parse(out.Data)
		require.NoError(t, err)
		var appended, whole bool
		for _, f := range cfg.Storage.Files {
			switch f.Path {
			case "/etc/hosts":
				appended = true
				assert.Len(t, f.Append, 1, "an append entry")
				assert.Nil(t, f.Contents.Source, "no contents: the image's file is kept")
				assert.False(t, f.Overwrite != nil && *f.Overwrite, "never overwritten")
			case "/etc/motd":
				whole = true
				assert.Empty(t, f.Append)
			}
		}
		assert.True(t, appended && whole)
		require.Len(t, cfg.Passwd.Users, 1)
		u := cfg.Passwd.Users[0]
		got, _ := json.Marshal(u)
		assert.JSONEq(t, `{"name":"ops","gecos":"Operations","homeDir":"/home/ops","shell":"/bin/bash","primaryGroup":"ops",
			"groups":["sudo","docker"],"passwordHash":"$6$salt$hash","sshAuthorizedKeys":["ssh-ed25519 AAAA ops@example"]}`, string(got))

		root := ignitionapply.Apply(t, out.Data)
		assert.Equal(t, "10.0.0.1 api.example\n", readFile(t, root, "/etc/hosts", 0o644), "appended to a file that was not there")
		assert.Equal(t, "whole\n", readFile(t, root, "/etc/motd", 0o644))
		script := readFile(t, root, ignition.KubeadmScriptPath, 0o700)
		assertInOrder(t, script, "CABPI_KUBEADM_VERBOSITY=5", "kubeadm join --config /etc/kubeadm.yml")
	}
}
