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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// node is an applied root booted again and again: each boot starts with an empty /run (a tmpfs)
// and the stub kubeadm put in place anew; a stub systemctl records what the script starts.
type node struct {
	t    *testing.T
	root string
}

// etcdStatus is what the stub curl answers for the local etcd member's status.
func (n node) boot(kubeadmExit int, etcdStatus ...string) bootcheck.Script {
	n.t.Helper()
	require.NoError(n.t, os.RemoveAll(filepath.Join(n.root, "run")))
	require.NoError(n.t, os.RemoveAll(filepath.Join(n.root, "usr/bin/kubeadm")))
	stub := "#!/bin/bash\nprintf '%s\\n' \"$*\" >>" + filepath.Join(n.root, "systemctl-calls") + "\n"
	n.write("/usr/local/bin/systemctl", stub, 0o755)
	curl := "#!/bin/bash\nexit 7\n" // curl's "failed to connect"
	if len(etcdStatus) > 0 {
		curl = "#!/bin/bash\nprintf '%s' '" + etcdStatus[0] + "'\n"
	}
	n.write("/usr/local/bin/curl", curl, 0o755)
	return bootcheck.RunScript(n.t, n.root, bootcheck.ScriptOptions{KubeadmDir: "/usr/bin", KubeadmExit: kubeadmExit})
}

func (n node) write(name, content string, mode os.FileMode) {
	n.t.Helper()
	require.NoError(n.t, os.MkdirAll(filepath.Dir(filepath.Join(n.root, name)), 0o755))
	require.NoError(n.t, os.WriteFile(filepath.Join(n.root, name), []byte(content), mode))
}

func (n node) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(n.root, name))
	return err == nil
}

func (n node) systemctlCalls() []string {
	data, err := os.ReadFile(filepath.Join(n.root, "systemctl-calls"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(n.t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func args(s bootcheck.Script) []string {
	var out []string
	for _, c := range s.KubeadmCalls {
		out = append(out, strings.Join(c.Args, " "))
	}
	return out
}

// A first boot whose kubeadm did not finish (a power cut looks the same on the disk as a
// failure: the attempt's mark and copy stay) is finished by the next boot, decided from what
// kubeadm and the kubelet left (docs/adr/034-interrupted-first-boot.md).
func TestInterruptedAttempt(t *testing.T) {
	const (
		kubeletConf = "/etc/kubernetes/kubelet.conf"
		clientCert  = "/var/lib/kubelet/pki/kubelet-client-current.pem"
		etcdMember  = "/var/lib/etcd/member/snap/db"
		bootstrap   = "/etc/kubernetes/bootstrap-kubelet.conf"
		caCert      = "/etc/kubernetes/pki/ca.crt"
	)
	cases := []struct {
		name       string
		input      func(cabpiv1.Variant, string) ignition.Input
		skip       []string // the user's skipPhases
		left       []string // files the interrupted kubeadm and kubelet left
		etcdStatus string   // the local etcd member's status, as curl gets it
		// what the next boot runs
		wantCalls   []string
		wantKubelet bool // the script starts the kubelet itself
	}{{
		name: "worker cut before the kubelet had its certificate: reset, then join", input: joinInput,
		left:      []string{bootstrap, "/var/lib/kubelet/config.yaml"},
		wantCalls: []string{"reset --force --cleanup-tmp-dir", "join --config /etc/kubeadm.yml"},
	}, {
		name: "worker cut after the kubelet had its certificate: the join had finished", input: joinInput,
		left:        []string{bootstrap, kubeletConf, clientCert},
		wantKubelet: true,
	}, {
		name: "worker with a kubeconfig but no certificate: reset, then join", input: joinInput,
		left:      []string{kubeletConf},
		wantCalls: []string{"reset --force --cleanup-tmp-dir", "join --config /etc/kubeadm.yml"},
	}, {
		name: "control plane cut before its etcd member ran: reset, then join", input: controlPlaneJoinInput,
		left:      []string{bootstrap, "/etc/kubernetes/manifests/etcd.yaml"},
		wantCalls: []string{"reset --force --cleanup-tmp-dir", "join --config /etc/kubeadm.yml"},
	}, {
		name: "control plane whose etcd member has data and is a learner: resumed, its member promoted", input: controlPlaneJoinInput,
		left:        []string{bootstrap, kubeletConf, etcdMember},
		skip:        []string{"preflight", "addon/kube-proxy"},
		etcdStatus:  `{"header":{"member_id":"1"},"version":"3.6.5","isLearner":true}`,
		wantCalls:   []string{"join --config /etc/kubeadm.yml --skip-phases=preflight,kubelet-start,addon/kube-proxy"},
		wantKubelet: true,
	}, {
		name: "control plane whose etcd member has data and votes: resumed, etcd not joined again", input: controlPlaneJoinInput,
		left:        []string{kubeletConf, etcdMember},
		etcdStatus:  `{"header":{"member_id":"1"},"version":"3.6.5","dbSize":"20480"}`,
		wantCalls:   []string{"join --config /etc/kubeadm.yml --skip-phases=preflight,kubelet-start,etcd-join,control-plane-join/etcd"},
		wantKubelet: true,
	}, {
		name: "init cut before etcd ran: reset, then init", input: initInput,
		left:      []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/manifests/etcd.yaml"},
		wantCalls: []string{"reset --force --cleanup-tmp-dir", "init --config /etc/kubeadm.yml"},
	}, {
		name: "init whose etcd has data: resumed, nothing lost", input: initInput,
		left:        []string{"/etc/kubernetes/admin.conf", etcdMember},
		skip:        []string{"addon/kube-proxy"},
		wantCalls:   []string{"init --config /etc/kubeadm.yml --skip-phases=preflight,addon/kube-proxy"},
		wantKubelet: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input(cabpiv1.VariantFlatcar, "v1.34.0")
			if in.Role == ignition.RoleInit {
				in.InitConfiguration.SkipPhases = tc.skip
			} else {
				in.JoinConfiguration.SkipPhases = tc.skip
			}
			out, err := ignition.Render(in)
			require.NoError(t, err)
			n := node{t: t, root: ignitionapply.Apply(t, out.Data)}
			written := map[string]string{}
			if in.Role != ignition.RoleWorkerJoin {
				written[caCert] = readFile(t, n.root, caCert, 0o644)
			}

			first := n.boot(1)
			require.NotEqual(t, 0, first.ExitCode)
			require.True(t, n.exists(ignition.AttemptMarkPath), "the attempt is marked on the disk")
			require.True(t, n.exists(ignition.KubeadmConfigPath), "the config stays")
			assert.Empty(t, n.systemctlCalls(), "a first attempt leaves the kubelet to kubeadm")
			for _, f := range tc.left {
				n.write(f, "left by the interrupted attempt", 0o600)
			}
			for name := range written {
				n.write(name, "changed by the interrupted attempt", 0o644)
			}

			next := n.boot(0, tc.etcdStatus)
			require.Equal(t, 0, next.ExitCode, next.Output)
			assert.Equal(t, tc.wantCalls, args(next))
			assert.Contains(t, next.Output, "cabpi: interrupted attempt found:")
			if tc.wantKubelet {
				assert.Equal(t, []string{"start kubelet.service"}, n.systemctlCalls())
			} else {
				assert.Empty(t, n.systemctlCalls(), "kubeadm starts the kubelet")
			}
			if len(next.KubeadmCalls) > 0 && strings.HasPrefix(args(next)[0], "reset") {
				for name, content := range written {
					assert.Equal(t, content, readFile(t, n.root, name, 0o644), "%s as Ignition wrote it", name)
				}
			}
			assert.True(t, next.SentinelExists)
			assert.False(t, n.exists(ignition.KubeadmConfigPath), "the token-bearing config is removed")
			assert.False(t, n.exists(ignition.AttemptStateDir), "the attempt's state and copy are removed")
		})
	}
}

// A power cut after kubeadm exited 0 and before the sentinel: the mark of success is on the
// disk, and the next boot only finishes, without kubeadm, with the kubelet started.
func TestInterruptedAfterKubeadmSucceeded(t *testing.T) {
	out, err := ignition.Render(joinInput(cabpiv1.VariantFCOS, "v1.34.0"))
	require.NoError(t, err)
	n := node{t: t, root: ignitionapply.Apply(t, out.Data)}
	n.write(ignition.KubeadmSucceededPath, "", 0o600)

	s := n.boot(0)
	require.Equal(t, 0, s.ExitCode, s.Output)
	assert.Empty(t, s.KubeadmCalls, "kubeadm does not run again")
	assert.Contains(t, s.Output, "cabpi: interrupted attempt found: kubeadm had succeeded")
	assert.Equal(t, []string{"start kubelet.service"}, n.systemctlCalls())
	assert.True(t, s.SentinelExists)
	assert.False(t, n.exists(ignition.KubeadmConfigPath))
	assert.False(t, n.exists(ignition.AttemptStateDir))
}

// The kubelet is held on a boot that finds an attempt's mark until the bootstrap runs: a first
// attempt writes the hold, success removes it. The variant's update agents are ordered after
// kubeadm.service.
func TestAttemptHoldsAndOrders(t *testing.T) {
	agents := map[cabpiv1.Variant]string{
		cabpiv1.VariantFCOS:    "zincati.service",
		cabpiv1.VariantFlatcar: "update-engine.service locksmithd.service",
	}
	for variant, before := range agents {
		t.Run(string(variant), func(t *testing.T) {
			out, err := ignition.Render(joinInput(variant, "v1.34.0"))
			require.NoError(t, err)
			root, u := appliedNode(t, out.Data)
			assert.Equal(t, []string{before}, u.Values("Unit", "Before"), "kubeadm.service comes before the update agents")

			n := node{t: t, root: root}
			failed := n.boot(1)
			require.NotEqual(t, 0, failed.ExitCode)
			// The script's node paths are below the applied root here (bootcheck): so are the
			// hold's, which the script writes from them.
			hold := readFile(t, root, ignition.KubeletHoldPath, 0o644)
			assert.Regexp(t, `^\[Unit\]\nConditionPathExists=\|!\S*`+regexp.QuoteMeta(ignition.AttemptMarkPath)+
				`\nConditionPathExists=\|\S*`+regexp.QuoteMeta(ignition.AttemptRunningPath)+`\n$`, hold)

			ok := n.boot(0)
			require.Equal(t, 0, ok.ExitCode, ok.Output)
			assert.False(t, n.exists(ignition.KubeletHoldPath), "the hold goes with the bootstrap")
		})
	}
}
