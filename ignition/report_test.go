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
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// Three independent mistakes, in three parts, are reported by one render: errors.As gives the
// first (the controller maps its kind to a reason), Error() names it and counts the others,
// Findings lists all three at their places. Prepare reports the same.
func TestRenderReportsEveryFinding(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, k8sRelease)
	in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage: [\n"
	in.Files = []ignition.File{{Path: ignition.KubeadmScriptPath, Content: []byte("x")}}
	in.JoinConfiguration.Discovery.TLSBootstrapToken = "not-a-token"

	for name, render := range map[string]func(ignition.Input) error{
		"Render":  func(in ignition.Input) error { _, err := ignition.Render(in); return err },
		"Prepare": func(in ignition.Input) error { _, err := ignition.Prepare(in); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := render(in)
			require.Error(t, err)
			findings := ignition.Findings(err)
			require.Len(t, findings, 3, "%v", err)
			var places []string
			for _, f := range findings {
				places = append(places, f.Place.String())
			}
			assert.ElementsMatch(t, []string{"butane", "files[0].path", "joinConfiguration.discovery.tlsBootstrapToken"}, places)

			var first *ignition.Error
			require.ErrorAs(t, err, &first)
			assert.Same(t, findings[0], first, "errors.As gives the first finding")
			assert.True(t, errors.Is(err, first.Kind), "errors.Is asks the first finding's kind")
			assert.Equal(t, first.Error()+"; and 2 more problems", err.Error())
		})
	}
}

// Findings the caller's own rules recorded (Input.Findings) come first in the render's report,
// and make an otherwise valid input fail.
func TestRenderReportsTheCallersFindingsFirst(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, k8sRelease)
	caller := &ignition.Error{Kind: ignition.ErrInvalidInput, Place: ignition.Entry(ignition.PartFile, 0, ignition.FileMode), Message: "bad"}
	in.Findings = []*ignition.Error{caller}
	_, err := ignition.Render(in)
	require.Error(t, err)
	assert.Equal(t, []*ignition.Error{caller}, ignition.Findings(err))
	assert.Equal(t, "files[0].permissions: bad", err.Error(), "one problem is not counted")
}

// The part table gives each place its spec field; places no spec field holds are the spec.
func TestPlaceFieldPath(t *testing.T) {
	root := field.NewPath("spec", "template", "spec")
	for _, tc := range []struct {
		at   ignition.Place
		want string
	}{
		{ignition.At(ignition.PartButane), "spec.template.spec.butane.inline"},
		{ignition.At(ignition.PartContainerLinuxConfig), "spec.template.spec.containerLinuxConfig.inline"},
		{ignition.Entry(ignition.PartFile, 2), "spec.template.spec.files[2].path"},
		{ignition.Entry(ignition.PartFile, 2, ignition.FileMode), "spec.template.spec.files[2].permissions"},
		{ignition.Entry(ignition.PartUser, 1, ignition.UserShell), "spec.template.spec.users[1].shell"},
		{ignition.Entry(ignition.PartPostKubeadmCommand, 3), "spec.template.spec.postKubeadmCommands[3]"},
		{ignition.At(ignition.PartKubernetes, ignition.KubernetesSysext, ignition.KubernetesBaseURL), "spec.template.spec.kubernetes.sysext.baseURL"},
		{ignition.At(ignition.PartJoinConfiguration, "discovery", "file", "kubeConfigPath"), "spec.template.spec.joinConfiguration.discovery.file.kubeConfigPath"},
		{ignition.At(ignition.PartKubernetesVersion), "spec.template.spec"},
		{ignition.Entry(ignition.PartCertificate, 1), "spec.template.spec"},
		{ignition.At(ignition.PartRole), "spec.template.spec"},
		{ignition.Place{}, "spec.template.spec"},
	} {
		assert.Equal(t, tc.want, tc.at.FieldPath(root).String(), "%s", tc.at)
	}
}

// Bad inputs that used to render or were refused in the wrong way: each refused at its place,
// with its kind.
func TestRenderRefusesBadInputs(t *testing.T) {
	sysext := cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}
	worker := func(k cabpiv1.KubernetesSpec, mutate ...func(*ignition.Input)) ignition.Input {
		return kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, k, mutate...)
	}
	butane := func(body string) func(*ignition.Input) {
		return withButane("variant: flatcar\nversion: 1.0.0\n" + body)
	}
	file := func(path, content string) func(*ignition.Input) {
		return withFiles(ignition.File{Path: path, Content: []byte(content)})
	}
	user := func(u ignition.User) func(*ignition.Input) {
		return func(in *ignition.Input) { in.Users = []ignition.User{u} }
	}
	discoveryAt := func(path string) func(*ignition.Input) {
		return func(in *ignition.Input) {
			in.JoinConfiguration.Discovery = kubeadmv1.Discovery{File: kubeadmv1.FileDiscovery{
				KubeConfigPath: path,
				KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{Cluster: kubeadmv1.KubeConfigCluster{
					Server: "https://" + testEndpoint, CertificateAuthorityData: []byte("ca")}},
			}}
		}
	}
	nodeName := func(in *ignition.Input) {
		in.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS}
		in.JoinConfiguration.NodeRegistration.Name = ""
	}
	binaries := func(base string) cabpiv1.KubernetesSpec {
		return cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: base}}
	}
	baseURLAt := ignition.At(ignition.PartKubernetes, ignition.KubernetesBinaries, ignition.KubernetesBaseURL)
	butaneAt := ignition.At(ignition.PartButane)
	hash := func(sum string) string {
		return "storage:\n  files:\n    - path: /opt/x\n      contents:\n        source: https://example.com/x\n" +
			"        verification:\n          hash: sha256-" + sum + "\n"
	}
	cases := []struct {
		name     string
		in       ignition.Input
		kind     ignition.ErrorKind
		at       ignition.Place
		contains string
	}{
		// Base URLs: a host name, a port in range.
		{"base URL without host", worker(binaries("https://:443/release")), ignition.ErrInvalidInput, baseURLAt, "no host name"},
		{"base URL port out of range", worker(binaries("https://mirror.example:70000/release")), ignition.ErrInvalidInput, baseURLAt, "port out of range"},
		{"base URL port zero", worker(binaries("https://mirror.example:0/release")), ignition.ErrInvalidInput, baseURLAt, "port out of range"},
		// The discovery kubeconfig at a path the source writes.
		{"discovery kubeconfig at the sysext link", worker(sysext, discoveryAt("/etc/extensions/kubernetes.raw")),
			ignition.ErrOwnedPathConflict, ignition.At(ignition.PartJoinConfiguration, "discovery", "file", "kubeConfigPath"), "/etc/extensions/kubernetes.raw"},
		{"discovery kubeconfig under /usr", worker(cabpiv1.KubernetesSpec{}, discoveryAt("/usr/share/discovery.conf")),
			ignition.ErrInvalidInput, ignition.At(ignition.PartJoinConfiguration, "discovery", "file", "kubeConfigPath"), "read-only"},
		// /usr is read-only.
		{"file under /usr", worker(cabpiv1.KubernetesSpec{}, file("/usr/local/bin/tool", "x")),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartFile, 0, ignition.FilePath), "read-only"},
		{"snippet file under /usr", worker(cabpiv1.KubernetesSpec{}, withButane(snippetFile("/usr/lib/x"))),
			ignition.ErrInvalidInput, butaneAt, "read-only"},
		{"snippet directory /usr", worker(cabpiv1.KubernetesSpec{}, butane("storage:\n  directories:\n    - path: /usr\n")),
			ignition.ErrInvalidInput, butaneAt, "read-only"},
		// Units the source or the node name needs.
		{"snippet masks systemd-sysext.service", worker(sysext, butane("systemd:\n  units:\n    - name: systemd-sysext.service\n      mask: true\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "masks unit systemd-sysext.service"},
		{"snippet disables systemd-sysext.service", worker(sysext, butane("systemd:\n  units:\n    - name: systemd-sysext.service\n      enabled: false\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "disables unit systemd-sysext.service"},
		{"snippet masks by a glob", worker(sysext, butane("systemd:\n  units:\n    - name: systemd-sys*.service\n      mask: true\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "systemd-sysext.service"},
		{"snippet links systemd-sysext.service to /dev/null", worker(sysext,
			butane("storage:\n  links:\n    - path: /etc/systemd/system/systemd-sysext.service\n      target: /dev/null\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "systemd-sysext.service"},
		{"preset file disables systemd-sysext.service", worker(sysext, file("/etc/systemd/system-preset/10-x.preset", "disable systemd-sysext.service\n")),
			ignition.ErrOwnedPathConflict, ignition.Entry(ignition.PartFile, 0, ignition.FileContent), "systemd-sysext.service"},
		{"snippet masks the metadata service naming the node", worker(cabpiv1.KubernetesSpec{}, nodeName,
			butane("systemd:\n  units:\n    - name: coreos-metadata.service\n      mask: true\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "coreos-metadata.service"},
		// Fields useradd refuses.
		{"shell with a newline", worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", Shell: "/bin/bash\nroot"})),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartUser, 0, ignition.UserShell), "useradd"},
		{"GECOS with a colon", worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", Gecos: "Ops:Team"})),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartUser, 0, ignition.UserGecos), "useradd"},
		{"primary group with a colon", worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", PrimaryGroup: "ops:x"})),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartUser, 0, ignition.UserPrimaryGroup), "useradd"},
		{"a group with a newline", worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", Groups: []string{"wheel", "docker\nroot"}})),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartUser, 0, ignition.UserGroups), "groups[1]"},
		{"a group with a comma", worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", Groups: []string{"wheel,root"}})),
			ignition.ErrInvalidInput, ignition.Entry(ignition.PartUser, 0, ignition.UserGroups), "','"},
		// Two sources for one node name.
		{"node name from metadata and nodeRegistration.name", worker(cabpiv1.KubernetesSpec{}, nodeName,
			func(in *ignition.Input) { in.JoinConfiguration.NodeRegistration.Name = "w0" }),
			ignition.ErrInvalidInput, ignition.At(ignition.PartNodeName), "name is set too"},
		{"node name from metadata and hostname-override", worker(cabpiv1.KubernetesSpec{}, nodeName, func(in *ignition.Input) {
			in.JoinConfiguration.NodeRegistration.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "hostname-override", Value: ptr.To("w0")}}
		}), ignition.ErrInvalidInput, ignition.At(ignition.PartNodeName), "hostname-override"},
		// A verification hash of the right length that is not hex.
		{"hash not hex", worker(cabpiv1.KubernetesSpec{}, butane(hash(strings.Repeat("z", 64)))),
			ignition.ErrInvalidButane, butaneAt, "not hexadecimal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { requireRefused(t, tc.in, tc.kind, tc.at, tc.contains) })
	}

	// Their near misses render: a drop-in for the unit, a hex hash, another port, /usr-like paths.
	for name, in := range map[string]ignition.Input{
		"drop-in for systemd-sysext.service": worker(sysext, butane("systemd:\n  units:\n    - name: systemd-sysext.service\n"+
			"      dropins:\n        - name: x.conf\n          contents: \"[Unit]\\n\"\n")),
		"masking another unit":   worker(sysext, butane("systemd:\n  units:\n    - name: update-engine.service\n      mask: true\n")),
		"hex hash":               worker(cabpiv1.KubernetesSpec{}, butane(hash(strings.Repeat("a", 64)))),
		"base URL with a port":   worker(binaries("https://mirror.example:8443/release")),
		"file at /usrx":          worker(cabpiv1.KubernetesSpec{}, file("/usrx/y", "x")),
		"GECOS with spaces":      worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", Gecos: "Ops Team, room 4"})),
		"groups of their own":    worker(cabpiv1.KubernetesSpec{}, user(ignition.User{Name: "ops", PrimaryGroup: "ops", Groups: []string{"wheel", "docker"}})),
		"discovery kubeconfig":   worker(sysext, discoveryAt("/etc/kubernetes/discovery.conf")),
		"metadata unit disabled": worker(cabpiv1.KubernetesSpec{}, butane("systemd:\n  units:\n    - name: coreos-metadata.service\n      enabled: false\n")),
	} {
		_, err := ignition.Render(in)
		assert.NoError(t, err, name)
	}
}

// A base URL with user information or a signed query is named by its field, never repeated:
// the message goes to admission, conditions and events.
func TestBaseURLSecretsNotRepeated(t *testing.T) {
	for _, base := range []string{
		"ftp://user:hunter2@mirror.example/release",
		"https://user:hunter2@mirror.example/release",
		"https://mirror.example/release?X-Amz-Signature=hunter2",
		"https://mirror.example:99999/release?sig=hunter2",
	} {
		in := kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: base}})
		_, err := ignition.Render(in)
		require.Error(t, err, base)
		var ierr *ignition.Error
		require.ErrorAs(t, err, &ierr)
		assert.Equal(t, "kubernetes.binaries.baseURL", ierr.Place.String())
		assert.NotContains(t, err.Error(), "hunter2")
		assert.Nil(t, ierr.Value, "no value to echo")
	}
}

// A Kubernetes sysext of the user's own under source image, at another version than the
// Machine's, is warned of (by its kind); at the Machine's version, or under source sysext
// (where the directory is the source's), it is not.
func TestForeignSysextVersionWarned(t *testing.T) {
	doc := func(version string) string {
		return "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /opt/extensions/kubernetes/kubernetes-" + version + "-x86-64.raw\n" +
			"      contents:\n        source: https://extensions.flatcar.org/extensions/kubernetes-" + version + "-x86-64.raw\n" +
			"  links:\n    - path: /etc/extensions/kubernetes.raw\n      target: /opt/extensions/kubernetes/kubernetes-" + version + "-x86-64.raw\n"
	}
	out, err := ignition.Render(kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{}, withButane(doc("v1.33.2"))))
	require.NoError(t, err)
	require.Len(t, out.Warnings, 1, "%v", out.Warnings)
	assert.Equal(t, ignition.WarnKubernetesVersionMismatch, out.Warnings[0].Kind)
	assert.Equal(t, ignition.PartButane, out.Warnings[0].Place.Part)
	assert.Contains(t, out.Warnings[0].Message, "v1.33.2")

	out, err = ignition.Render(kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{}, withButane(doc(k8sRelease))))
	require.NoError(t, err)
	assert.Empty(t, out.Warnings)

	in := kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{},
		withFiles(ignition.File{Path: "/opt/extensions/kubernetes/kubernetes-v1.35.0-arm64.raw", Content: []byte("x"), Mode: 0o644}))
	out, err = ignition.Render(in)
	require.NoError(t, err)
	require.Len(t, out.Warnings, 1)
	assert.Equal(t, "files[0].path", out.Warnings[0].Place.String())
}

// A user defined in the input's users and again in the snippet renders with a warning that
// names the user and the snippet, at the user's place; another user in the snippet is not
// warned of.
func TestUserDefinedTwiceWarned(t *testing.T) {
	snippet := "variant: flatcar\nversion: 1.0.0\npasswd:\n  users:\n    - name: ops\n      shell: /bin/sh\n    - name: dev\n"
	in := kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{}, withButane(snippet), func(in *ignition.Input) {
		in.Users = []ignition.User{{Name: "admin"}, {Name: "ops", Shell: "/bin/bash"}}
	})
	out, err := ignition.Render(in)
	require.NoError(t, err)
	require.Len(t, out.Warnings, 1, "%v", out.Warnings)
	assert.Equal(t, ignition.WarnUserDefinedTwice, out.Warnings[0].Kind)
	assert.Equal(t, "users[1].name", out.Warnings[0].Place.String())
	assert.Contains(t, out.Warnings[0].Message, `"ops"`)
	assert.Contains(t, out.Warnings[0].Message, "butane")
}
