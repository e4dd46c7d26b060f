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

package ignition

import (
	"io/fs"

	"github.com/blang/semver/v4"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"mvdan.cc/sh/v3/syntax"
)

// Complete commands are accepted, whatever their shape.
func TestCompleteCommandAccepts(t *testing.T) {
	for _, command := range []string{
		"echo ok",
		"echo a; echo b",
		`echo a \\`,      // an escaped backslash, not a line continuation
		"echo a \\\n  b", // a continuation inside the command
		"cat > /etc/x <<EOF\nhello\nEOF",
		"if true; then\n  echo x\nfi",
		`echo "it's"`,
		"",
		"# only a comment",
	} {
		assert.NoError(t, completeCommand(command), "%q", command)
	}
}

// The user's commands sit between the fixed parts. The pre-kubeadm commands run in a subshell,
// after an empty line that guards the closing parenthesis from the last one, unless an earlier
// attempt's kubeadm had finished; the kubeadm step keeps a line of its own (CAPD finds it by its
// text) right after the sentinel is cleared; the metadata substitution and the attempt's
// bookkeeping come before the user's commands, the mark of kubeadm's success right after it.
func TestKubeadmScriptLayout(t *testing.T) {
	script, err := kubeadmScript(RoleWorkerJoin, nil, nil, nil, resumePhases{skip: "preflight"}, []string{"echo pre"}, []string{"echo post"})
	require.NoError(t, err)
	assert.Contains(t, script, "\ncabpi_attempt preflight\nif [[ $CABPI_KUBEADM != done ]]; then\n(\necho pre\n\n)\nfi\n")
	const flags = ` ${CABPI_KUBEADM_VERBOSITY:+"--v=${CABPI_KUBEADM_VERBOSITY}"} ${CABPI_SKIP_PHASES:+"--skip-phases=${CABPI_SKIP_PHASES}"}`
	assert.Contains(t, script, "\nrm -rf /run/cluster-api/bootstrap-success.complete\nif [[ $CABPI_KUBEADM != done ]]; then\nkubeadm join --config /etc/kubeadm.yml"+flags+"\nfi\n: >/var/lib/cabpi-bootstrap/kubeadm-succeeded\n")
	assert.NotContains(t, script, "CABPI_KUBEADM_VERBOSITY=", "no verbosity set: kubeadm's default")
	assert.True(t, strings.HasSuffix(script, "\necho post\n"), script)
	assert.NotContains(t, script, "cabpi_substitute_metadata")

	script, err = kubeadmScript(RoleInit, nil, nil, nil, resumePhases{skip: "preflight"}, nil, nil)
	require.NoError(t, err)
	assert.NotContains(t, script, "\n(\n", "no subshell without commands")
	assert.Contains(t, script, "\ncabpi_attempt preflight\n")
	assert.Contains(t, script, "\nkubeadm init --config /etc/kubeadm.yml"+flags+"\n")

	// verbosity (KubeadmConfig's) is kubeadm's --v, set just before the kubeadm step.
	script, err = kubeadmScript(RoleWorkerJoin, ptr.To(int32(5)), nil, nil, resumePhases{skip: "preflight"}, []string{"echo pre"}, nil)
	require.NoError(t, err)
	assert.Contains(t, script, "\n)\nfi\nCABPI_KUBEADM_VERBOSITY=5\nrm -rf /run/cluster-api/bootstrap-success.complete\n")

	script, err = kubeadmScript(RoleWorkerJoin, nil, nil, []string{"name=COREOS_EC2_HOSTNAME", "id=COREOS_EC2_INSTANCE_ID"}, resumePhases{skip: "preflight"}, []string{"echo pre"}, nil)
	require.NoError(t, err)
	call := "\ncabpi_substitute_metadata /etc/kubeadm.yml 'name=COREOS_EC2_HOSTNAME' 'id=COREOS_EC2_INSTANCE_ID'\n"
	assert.Contains(t, script, call)
	assert.Less(t, strings.Index(script, call), strings.Index(script, "echo pre"))
}

// Each role's script holds only that role's steps: a worker's decides from its kubelet's
// certificate and has no etcd step; an init resumes over etcd's data and never asks etcd whether
// it votes; only a control-plane join does.
func TestKubeadmScriptHoldsOnlyTheRolesSteps(t *testing.T) {
	for _, tc := range []struct {
		role        Role
		resume      resumePhases
		has, hasNot []string
	}{
		{RoleWorkerJoin, resumePhases{skip: "preflight"},
			[]string{"kubelet-client-current.pem"}, []string{"etcd", "resume"}},
		{RoleInit, resumePhases{skip: "preflight"},
			[]string{"/var/lib/etcd/member", "CABPI_KUBEADM=resume"}, []string{"kubelet-client-current.pem", "cabpi_skip_etcd_join", "isLearner"}},
		{RoleControlPlaneJoin, resumePhases{skip: "preflight,kubelet-start", voterSkip: "etcd-join"},
			[]string{"/var/lib/etcd/member", "isLearner", "\ncabpi_attempt preflight,kubelet-start\ncabpi_skip_etcd_join etcd-join\n"}, []string{"kubelet-client-current.pem"}},
	} {
		script, err := kubeadmScript(tc.role, nil, nil, nil, tc.resume, nil, nil)
		require.NoError(t, err)
		for _, s := range tc.has {
			assert.Contains(t, script, s, tc.role)
		}
		for _, s := range tc.hasNot {
			assert.NotContains(t, script, s, tc.role)
		}
	}
}

// Every script the renderer can compose is valid bash.
func TestKubeadmScriptParses(t *testing.T) {
	for _, role := range []Role{RoleInit, RoleControlPlaneJoin, RoleWorkerJoin} {
		for _, subs := range [][]string{nil, {"name=HOSTNAME"}} {
			script, err := kubeadmScript(role, nil, nil, subs, resumePhases{skip: "preflight", voterSkip: "etcd-join"}, []string{"echo pre"}, []string{"echo post"})
			require.NoError(t, err)
			_, err = syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "kubeadm.sh")
			require.NoError(t, err, script)
		}
	}
}

// An apostrophe in a comment of the fixed scripts would close a quote a user's command left
// open, and let the script run on past the kubeadm step.
func TestScriptCommentsHaveNoApostrophes(t *testing.T) {
	files, err := fs.Glob(scripts, "scripts/*.sh")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		data, err := scripts.ReadFile(name)
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				assert.NotContains(t, line, "'", "%s:%d", name, i+1)
			}
		}
	}
}

// What a resumed kubeadm skips, by role and version: preflight always, kubelet-start for a
// control-plane join, the user's phases once; and, for a control-plane join whose etcd member
// votes, the etcd join phases the version has.
func TestResumePhases(t *testing.T) {
	for _, tc := range []struct {
		role    Role
		user    []string
		version string
		want    resumePhases
	}{
		{RoleWorkerJoin, nil, "1.34.4", resumePhases{skip: "preflight"}},
		{RoleInit, []string{"addon/kube-proxy", "preflight"}, "1.34.4", resumePhases{skip: "preflight,addon/kube-proxy"}},
		{RoleControlPlaneJoin, nil, "1.30.4", resumePhases{skip: "preflight,kubelet-start", voterSkip: "control-plane-join/etcd"}},
		{RoleControlPlaneJoin, nil, "1.31.0", resumePhases{skip: "preflight,kubelet-start", voterSkip: "etcd-join,control-plane-join/etcd"}},
		{RoleControlPlaneJoin, []string{"kubelet-start"}, "1.34.4", resumePhases{skip: "preflight,kubelet-start", voterSkip: "etcd-join,control-plane-join/etcd"}},
		{RoleControlPlaneJoin, nil, "1.35.0", resumePhases{skip: "preflight,kubelet-start", voterSkip: "etcd-join"}},
	} {
		ver := semver.MustParse(tc.version)
		assert.Equal(t, tc.want, resumePhasesFor(tc.role, tc.user, ver), "%s %v %s", tc.role, tc.user, tc.version)
	}
}
