package ignition

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/syntax"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The update's arguments name the version's files in the source's layout, at the same places
// first boot downloads them from; what first boot refuses (and source image) is refused.
func TestInPlaceUpdateFor(t *testing.T) {
	const bakery = cabpiv1.DefaultSysextBaseURL
	cases := []struct {
		name     string
		spec     cabpiv1.KubernetesSpec
		version  string
		wantArgs []string
		// wantErr is the error's kind and what its message says; "" for none.
		wantKind ErrorKind
		wantMsg  string
	}{
		{name: "sysext from the bakery", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, version: "v1.34.4",
			wantArgs: []string{"sysext", "v1.34.4", "kubernetes-v1.34.4-x86-64.raw", bakery + "/kubernetes-v1.34.4-x86-64.raw", bakery + "/kubernetes/SHA256SUMS"}},
		{name: "sysext arm64 from a mirror", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: cabpiv1.ArchitectureARM64,
			Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext/"}}, version: "v1.33.2",
			wantArgs: []string{"sysext", "v1.33.2", "kubernetes-v1.33.2-arm64.raw", "https://mirror.example/ext/kubernetes-v1.33.2-arm64.raw",
				"https://mirror.example/ext/kubernetes/SHA256SUMS"}},
		{name: "binaries", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}, version: "v1.34.4",
			wantArgs: []string{"binaries", "v1.34.4", cabpiv1.DefaultBinariesBaseURL + "/v1.34.4/bin/linux/amd64", "kubeadm", "kubelet"}},
		{name: "binaries with kubectl from a mirror, a pre-release", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Arch: cabpiv1.ArchitectureARM64, Binaries: &cabpiv1.BinariesSource{BaseURL: "http://mirror.example:8080/release", Kubectl: true}},
			version:  "v1.35.0-rc.1",
			wantArgs: []string{"binaries", "v1.35.0-rc.1", "http://mirror.example:8080/release/v1.35.0-rc.1/bin/linux/arm64", "kubeadm", "kubelet", "kubectl"}},
		{name: "image", spec: cabpiv1.KubernetesSpec{}, version: "v1.34.4", wantKind: ErrInvalidInput, wantMsg: "nothing to swap in place"},
		{name: "image, named", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage}, version: "v1.34.4",
			wantKind: ErrInvalidInput, wantMsg: "nothing to swap in place"},
		{name: "sysext of a pre-release", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, version: "v1.35.0-rc.1",
			wantKind: ErrUnsupportedKubernetesVersion, wantMsg: "not a release the sysext layout has"},
		{name: "binaries with build metadata", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}, version: "v1.34.0+vendor.1",
			wantKind: ErrUnsupportedKubernetesVersion, wantMsg: "not a version the Kubernetes release layout has"},
		{name: "a base URL with a query", spec: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/r?sig=secret"}}, version: "v1.34.4",
			wantKind: ErrInvalidInput, wantMsg: "has a query"},
		{name: "an unknown source", spec: cabpiv1.KubernetesSpec{Source: "rpm"}, version: "v1.34.4", wantKind: ErrInvalidInput, wantMsg: "not image, sysext or binaries"},
	}
	nodeScript, err := inPlaceScript(nodeInPlaceLayout)
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			update, err := InPlaceUpdateFor(tc.spec, tc.version)
			if tc.wantKind != "" {
				require.ErrorIs(t, err, tc.wantKind)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Contains(t, e.Message, tc.wantMsg)
				assert.NotContains(t, err.Error(), "secret", "a URL that may carry credentials is not repeated")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantArgs, update.Args)
			assert.Equal(t, nodeScript, update.Script, "one script for every version")
		})
	}
}

// The node's script is valid bash and finds things where first boot put them.
func TestInPlaceScriptLayout(t *testing.T) {
	script, err := inPlaceScript(nodeInPlaceLayout)
	require.NoError(t, err)
	_, err = syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(string(script)), "update.sh")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(script), "#!/bin/bash\n"))
	assert.True(t, strings.HasSuffix(string(script), "\ncabpi_inplace_layout /var/lib/cabpi-update /opt/extensions/kubernetes /etc/extensions/kubernetes.raw /opt/bin "+
		"/var/lib/kubelet/config.yaml /var/lib/kubelet/kubeadm-flags.env 120\ncabpi_inplace_update \"$@\"\n"), string(script))
	assert.Contains(t, string(script), "\ncabpi_check_kubernetes() {", "first boot's version check")
	assert.NotContains(t, string(script), "bootstrap-success.complete", "a running node keeps its bootstrap sentinel")
}

// inPlaceNode is a node on a temporary root for the update script: its layout, fakes on PATH for
// everything the script runs on the host, and a web root the fake curl serves.
type inPlaceNode struct {
	t      *testing.T
	root   string
	layout inPlaceLayout
	script string
}

const (
	inPlaceOld  = "v1.33.2"
	inPlaceNew  = "v1.34.4"
	inPlaceBase = "http://mirror.test"
)

// newInPlaceNode lays out a node of source at version.
func newInPlaceNode(t *testing.T, source cabpiv1.KubernetesSource, version string, kubectl bool) *inPlaceNode {
	t.Helper()
	_, err := exec.LookPath("bash")
	require.NoError(t, err, "bash")
	root := t.TempDir()
	n := &inPlaceNode{t: t, root: root, layout: inPlaceLayout{
		stateDir:      filepath.Join(root, "var/lib/cabpi-update"),
		sysextDir:     filepath.Join(root, "opt/extensions/kubernetes"),
		sysextLink:    filepath.Join(root, "etc/extensions/kubernetes.raw"),
		binDir:        filepath.Join(root, "opt/bin"),
		kubeletConfig: filepath.Join(root, "var/lib/kubelet/config.yaml"),
		kubeletFlags:  filepath.Join(root, "var/lib/kubelet/kubeadm-flags.env"),
		healthTimeout: 1,
	}}
	script, err := inPlaceScript(n.layout)
	require.NoError(t, err)
	n.script = filepath.Join(root, "update.sh")
	n.write(n.script, string(script), 0o700)
	n.write(n.layout.kubeletConfig, "old config\n", 0o644)
	n.write(n.layout.kubeletFlags, "old flags\n", 0o644)

	// The fakes log every call, one line each, to one file (the order of the steps).
	calls := filepath.Join(root, "calls")
	fake := filepath.Join(root, "fake")
	n.write(filepath.Join(root, "fakebin/systemctl"), `#!/bin/sh
echo "systemctl $*" >>`+calls+`
if [ "$1" = restart ] && [ -e `+fake+`/restart-fails ]; then
  rm -f `+fake+`/restart-fails
  echo "Job for kubelet.service failed because the control process exited with error code." >&2
  exit 1
fi
`, 0o755)
	// systemd-sysext refresh merges the linked image: its first line is the version of the
	// kubeadm and kubelet it brings to /usr/bin.
	n.write(filepath.Join(root, "fakebin/systemd-sysext"), `#!/bin/sh
echo "systemd-sysext $*" >>`+calls+`
v=$(head -n 1 "$(readlink -f `+n.layout.sysextLink+`)")
mkdir -p `+root+`/usr/bin
printf '#!/bin/sh\ncase "$1" in version) echo %s ;; upgrade) exec `+root+`/fakebin/kubeadm-upgrade %s "$@" ;; esac\n' "$v" "$v" >`+root+`/usr/bin/kubeadm
printf '#!/bin/sh\necho "Kubernetes %s"\n' "$v" >`+root+`/usr/bin/kubelet
chmod 0755 `+root+`/usr/bin/kubeadm `+root+`/usr/bin/kubelet
`, 0o755)
	// kubeadm upgrade node rewrites the kubelet files; it fails with fake/upgrade-fails and
	// kills the update (as a reboot would) with fake/upgrade-dies.
	n.write(filepath.Join(root, "fakebin/kubeadm-upgrade"), `#!/bin/sh
v=$1
shift
echo "kubeadm $* ($v)" >>`+calls+`
if [ -e `+fake+`/upgrade-dies ]; then
  rm -f `+fake+`/upgrade-dies
  kill -KILL 0
fi
if [ -e `+fake+`/upgrade-fails ]; then
  echo "error execution phase kubelet-config: the kubelet-config ConfigMap is gone" >&2
  exit 1
fi
echo "upgraded config $v" >`+n.layout.kubeletConfig+`
echo "upgraded flags $v" >`+n.layout.kubeletFlags+`
`, 0o755)
	// curl serves the web root, and the kubelet's health unless fake/unhealthy.
	n.write(filepath.Join(root, "fakebin/curl"), `#!/bin/bash
out= url=
while (($#)); do
  case $1 in
  -o) out=$2; shift ;;
  -m) shift ;;
  -*) ;;
  *) url=$1 ;;
  esac
  shift
done
echo "curl $url" >>`+calls+`
if [[ $url == http://127.0.0.1:10248/healthz ]]; then
  [[ ! -e `+fake+`/unhealthy ]] || exit 7
  printf ok
  exit 0
fi
file=`+root+`/www/${url#`+inPlaceBase+`/}
if [[ ! -f $file ]]; then
  echo "curl: (22) The requested URL returned error: 404" >&2
  exit 22
fi
cp "$file" "$out"
`, 0o755)
	require.NoError(t, os.MkdirAll(fake, 0o755))

	switch source {
	case cabpiv1.KubernetesSourceSysext:
		for _, v := range []string{inPlaceOld, inPlaceNew} {
			image := []byte(v + "\nfake system extension image\n")
			n.write(filepath.Join(root, "www", SysextImageName(v, cabpiv1.ArchitectureAMD64)), string(image), 0o644)
		}
		n.writeSums(map[string]string{})
		image := filepath.Join(n.layout.sysextDir, SysextImageName(version, cabpiv1.ArchitectureAMD64))
		n.write(image, n.read(filepath.Join(root, "www", SysextImageName(version, cabpiv1.ArchitectureAMD64))), 0o644)
		require.NoError(t, os.MkdirAll(filepath.Dir(n.layout.sysextLink), 0o755))
		require.NoError(t, os.Symlink(image, n.layout.sysextLink))
		n.run(t, filepath.Join(root, "fakebin/systemd-sysext"), "merge")
	case cabpiv1.KubernetesSourceBinaries:
		names := []string{"kubeadm", "kubelet", "kubectl"}
		for _, v := range []string{inPlaceOld, inPlaceNew} {
			dir := filepath.Join(root, "www", v, "bin/linux/amd64")
			for _, name := range names {
				data := n.fakeBinary(name, v)
				n.write(filepath.Join(dir, name), data, 0o644)
				n.write(filepath.Join(dir, name+".sha256"), inPlaceDigest(data), 0o644)
			}
		}
		if !kubectl {
			names = names[:2]
		}
		for _, name := range names {
			n.write(filepath.Join(n.layout.binDir, name), n.fakeBinary(name, version), 0o755)
		}
	}
	if err := os.Remove(calls); err != nil {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	return n
}

// fakeBinary is a release binary of version: kubeadm, the kubelet and kubectl answer the version
// questions; kubeadm upgrade is the fake upgrade.
func (n *inPlaceNode) fakeBinary(name, version string) string {
	switch name {
	case "kubeadm":
		return "#!/bin/sh\ncase \"$1\" in version) echo " + version + " ;; upgrade) exec " + n.root + "/fakebin/kubeadm-upgrade " + version + " \"$@\" ;; esac\n"
	case "kubelet":
		return "#!/bin/sh\necho 'Kubernetes " + version + "'\n"
	}
	return "#!/bin/sh\necho 'Client Version: " + version + "'\necho 'Kustomize Version: v5.7.1'\n"
}

// writeSums publishes the bakery's digest list, with edits: a file name to a digest ("" drops
// its line).
func (n *inPlaceNode) writeSums(edit map[string]string) {
	var b strings.Builder
	for _, v := range []string{inPlaceOld, inPlaceNew} {
		name := SysextImageName(v, cabpiv1.ArchitectureAMD64)
		sum := inPlaceDigest(n.read(filepath.Join(n.root, "www", name)))
		if e, ok := edit[name]; ok {
			sum = e
		}
		if sum != "" {
			b.WriteString(sum + "  " + name + "\n")
		}
	}
	b.WriteString(strings.Repeat("ab", 32) + "  kubernetes-v1.34.4-arm64.raw\n")
	n.write(filepath.Join(n.root, "www/kubernetes/SHA256SUMS"), b.String(), 0o644)
}

func inPlaceDigest(data string) string {
	sum := sha256.Sum256([]byte(data))
	return hex.EncodeToString(sum[:])
}

func (n *inPlaceNode) write(path, content string, mode os.FileMode) {
	n.t.Helper()
	require.NoError(n.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(n.t, os.WriteFile(path, []byte(content), mode))
}

func (n *inPlaceNode) read(path string) string {
	n.t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(n.t, err)
	return string(data)
}

// breakStep makes a fake fail: restart-fails, upgrade-fails, upgrade-dies, unhealthy.
func (n *inPlaceNode) breakStep(name string) {
	n.write(filepath.Join(n.root, "fake", name), "", 0o644)
}

func (n *inPlaceNode) run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=" + filepath.Join(n.root, "fakebin") + ":" + filepath.Join(n.root, "usr/bin") + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	// Its own process group: the fake that kills the update kills the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// update runs the update script to version as the unit does; it returns the result line and
// the output.
func (n *inPlaceNode) update(source cabpiv1.KubernetesSource, version string, kubectl bool) (result, output string, err error) {
	n.t.Helper()
	spec := cabpiv1.KubernetesSpec{Source: source}
	switch source {
	case cabpiv1.KubernetesSourceSysext:
		spec.Sysext = &cabpiv1.SysextSource{BaseURL: inPlaceBase}
	case cabpiv1.KubernetesSourceBinaries:
		spec.Binaries = &cabpiv1.BinariesSource{BaseURL: inPlaceBase, Kubectl: kubectl}
	}
	update, ierr := InPlaceUpdateFor(spec, version)
	require.NoError(n.t, ierr)
	output, err = n.run(n.t, "bash", append([]string{n.script}, update.Args...)...)
	data, rerr := os.ReadFile(filepath.Join(n.layout.stateDir, InPlaceResultName))
	if rerr != nil {
		require.ErrorIs(n.t, rerr, os.ErrNotExist)
	}
	return strings.TrimSuffix(string(data), "\n"), output, err
}

func (n *inPlaceNode) calls() []string {
	data, err := os.ReadFile(filepath.Join(n.root, "calls"))
	if err != nil {
		require.ErrorIs(n.t, err, os.ErrNotExist)
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// kubernetesAt asserts what the node runs: the kubeadm and kubelet on PATH as the script sees
// it, the link for sysext, the binaries in /opt/bin.
func (n *inPlaceNode) kubernetesAt(source cabpiv1.KubernetesSource, version string, kubectl bool) {
	t := n.t
	t.Helper()
	switch source {
	case cabpiv1.KubernetesSourceSysext:
		target, err := os.Readlink(n.layout.sysextLink)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(n.layout.sysextDir, SysextImageName(version, cabpiv1.ArchitectureAMD64)), target)
		assert.Equal(t, "#!/bin/sh\necho \"Kubernetes "+version+"\"\n", n.read(filepath.Join(n.root, "usr/bin/kubelet")), "the merged kubelet")
	case cabpiv1.KubernetesSourceBinaries:
		names := []string{"kubeadm", "kubelet"}
		if kubectl {
			names = append(names, "kubectl")
		}
		for _, name := range names {
			assert.Equal(t, n.fakeBinary(name, version), n.read(filepath.Join(n.layout.binDir, name)), name)
			info, err := os.Stat(filepath.Join(n.layout.binDir, name))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), name)
		}
		entries, err := os.ReadDir(n.layout.binDir)
		require.NoError(t, err)
		assert.Len(t, entries, len(names), "no leftover files in /opt/bin")
	}
}

// finished asserts that no update is in progress: no journal, no backup.
func (n *inPlaceNode) finished() {
	n.t.Helper()
	for _, name := range []string{"journal", "backup"} {
		_, err := os.Stat(filepath.Join(n.layout.stateDir, name))
		assert.ErrorIs(n.t, err, os.ErrNotExist, name)
	}
}

// indexOf is the index of the first call that starts with prefix, -1 when none does.
func indexOf(calls []string, prefix string) int {
	for i, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return i
		}
	}
	return -1
}

var (
	sysextSource   = cabpiv1.KubernetesSourceSysext
	binariesSource = cabpiv1.KubernetesSourceBinaries
)

// The update on a real bash, each source: the version swapped in, kubeadm upgrade node, the
// kubelet restarted on it and healthy, in that order, and the state cleared.
func TestInPlaceUpdateSucceeds(t *testing.T) {
	for _, tc := range []struct {
		source  cabpiv1.KubernetesSource
		kubectl bool
		swapped []string // the calls that swap, before kubeadm upgrade node
	}{
		{source: sysextSource, swapped: []string{"systemd-sysext refresh", "systemctl daemon-reload"}},
		{source: binariesSource},
		{source: binariesSource, kubectl: true},
	} {
		t.Run(string(tc.source)+map[bool]string{true: " with kubectl"}[tc.kubectl], func(t *testing.T) {
			n := newInPlaceNode(t, tc.source, inPlaceOld, tc.kubectl)
			result, output, err := n.update(tc.source, inPlaceNew, tc.kubectl)
			require.NoError(t, err, output)
			assert.Equal(t, "ok "+inPlaceNew, result, output)
			assert.Contains(t, output, "cabpi: ok "+inPlaceNew)
			n.kubernetesAt(tc.source, inPlaceNew, tc.kubectl)
			assert.Equal(t, "upgraded config "+inPlaceNew+"\n", n.read(n.layout.kubeletConfig))
			n.finished()
			_, err = os.Stat(filepath.Join(n.layout.stateDir, "stage"))
			assert.ErrorIs(t, err, os.ErrNotExist, "the staged binaries are gone")

			calls := n.calls()
			upgrade := indexOf(calls, "kubeadm upgrade node --certificate-renewal=false ("+inPlaceNew+")")
			restart := indexOf(calls, "systemctl restart kubelet.service")
			health := indexOf(calls, "curl http://127.0.0.1:10248/healthz")
			require.NotEqual(t, -1, upgrade, "the new kubeadm upgrades the node: %v", calls)
			require.NotEqual(t, -1, restart, "the kubelet is restarted: %v", calls)
			assert.Less(t, upgrade, restart, "%v", calls)
			assert.Less(t, restart, health, "%v", calls)
			for _, c := range tc.swapped {
				i := indexOf(calls, c)
				assert.NotEqual(t, -1, i, "%s: %v", c, calls)
				assert.Less(t, i, upgrade, "%s before the upgrade: %v", c, calls)
			}
		})
	}
}

// A download that does not match its published SHA-256, or has none published, stops the update
// before anything on the node changes.
func TestInPlaceUpdateDigestMismatch(t *testing.T) {
	newImage := SysextImageName(inPlaceNew, cabpiv1.ArchitectureAMD64)
	release := func(n *inPlaceNode, name string) string {
		return filepath.Join(n.root, "www", inPlaceNew, "bin/linux/amd64", name)
	}
	for _, tc := range []struct {
		name    string
		source  cabpiv1.KubernetesSource
		kubectl bool
		edit    func(n *inPlaceNode)
		file    string
	}{
		{name: "sysext image changed", source: sysextSource, file: newImage, edit: func(n *inPlaceNode) {
			n.write(filepath.Join(n.root, "www", newImage), inPlaceNew+"\na changed image\n", 0o644)
		}},
		{name: "sysext digest wrong", source: sysextSource, file: newImage, edit: func(n *inPlaceNode) {
			n.writeSums(map[string]string{newImage: strings.Repeat("0", 64)})
		}},
		{name: "sysext digest list without the image", source: sysextSource, file: newImage, edit: func(n *inPlaceNode) {
			n.writeSums(map[string]string{newImage: ""})
		}},
		{name: "sysext digest list missing", source: sysextSource, file: newImage, edit: func(n *inPlaceNode) {
			require.NoError(t, os.Remove(filepath.Join(n.root, "www/kubernetes/SHA256SUMS")))
		}},
		{name: "kubelet changed", source: binariesSource, file: "kubelet", edit: func(n *inPlaceNode) {
			n.write(release(n, "kubelet"), n.fakeBinary("kubelet", "v1.34.5"), 0o644)
		}},
		{name: "kubectl digest is kubeadm's", source: binariesSource, kubectl: true, file: "kubectl", edit: func(n *inPlaceNode) {
			n.write(release(n, "kubectl.sha256"), n.read(release(n, "kubeadm.sha256")), 0o644)
		}},
		{name: "kubeadm digest missing", source: binariesSource, file: "kubeadm", edit: func(n *inPlaceNode) {
			require.NoError(t, os.Remove(release(n, "kubeadm.sha256")))
		}},
		{name: "kubelet digest an error page", source: binariesSource, file: "kubelet", edit: func(n *inPlaceNode) {
			n.write(release(n, "kubelet.sha256"), "<html>404</html>\n", 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newInPlaceNode(t, tc.source, inPlaceOld, tc.kubectl)
			tc.edit(n)
			result, output, err := n.update(tc.source, inPlaceNew, tc.kubectl)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, output)
			assert.Equal(t, 1, exit.ExitCode())
			assert.True(t, strings.HasPrefix(result, "failed: "+tc.file+" does not match its published SHA-256"), result)
			n.kubernetesAt(tc.source, inPlaceOld, tc.kubectl)
			assert.Equal(t, "old config\n", n.read(n.layout.kubeletConfig))
			n.finished()
			for _, c := range n.calls() {
				assert.False(t, strings.HasPrefix(c, "systemctl") || strings.HasPrefix(c, "systemd-sysext") || strings.HasPrefix(c, "kubeadm"),
					"nothing is swapped or run: %s", c)
			}
			if tc.source == sysextSource {
				entries, err := os.ReadDir(n.layout.sysextDir)
				require.NoError(t, err)
				require.Len(t, entries, 1, "only the old image, no partial download")
			}
		})
	}
}

// A step after the swap that fails rolls the node back: the old link or binaries, the kubelet
// files as they were, the kubelet restarted on them and healthy.
func TestInPlaceUpdateRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		source  cabpiv1.KubernetesSource
		kubectl bool
		broken  string
		want    string
	}{
		{name: "sysext, kubeadm upgrade node fails", source: sysextSource, broken: "upgrade-fails",
			want: "failed: kubeadm upgrade node: error execution phase kubelet-config: the kubelet-config ConfigMap is gone; rolled back to v1.33.2"},
		{name: "binaries, kubeadm upgrade node fails", source: binariesSource, kubectl: true, broken: "upgrade-fails",
			want: "failed: kubeadm upgrade node: error execution phase kubelet-config: the kubelet-config ConfigMap is gone; rolled back to v1.33.2"},
		{name: "sysext, the kubelet restart fails", source: sysextSource, broken: "restart-fails",
			want: "failed: kubelet restart: Job for kubelet.service failed because the control process exited with error code.; rolled back to v1.33.2"},
		{name: "binaries, the kubelet restart fails", source: binariesSource, broken: "restart-fails",
			want: "failed: kubelet restart: Job for kubelet.service failed because the control process exited with error code.; rolled back to v1.33.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newInPlaceNode(t, tc.source, inPlaceOld, false)
			n.breakStep(tc.broken)
			result, output, err := n.update(tc.source, inPlaceNew, tc.kubectl)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, output)
			assert.Equal(t, tc.want, result, output)
			n.kubernetesAt(tc.source, inPlaceOld, false)
			assert.Equal(t, "old config\n", n.read(n.layout.kubeletConfig))
			assert.Equal(t, "old flags\n", n.read(n.layout.kubeletFlags))
			n.finished()

			calls := n.calls()
			failed := indexOf(calls, "kubeadm upgrade node")
			if tc.broken == "restart-fails" {
				failed = indexOf(calls, "systemctl restart kubelet.service")
			}
			require.NotEqual(t, -1, failed, "%v", calls)
			rest := calls[failed+1:]
			restart := indexOf(rest, "systemctl restart kubelet.service")
			require.NotEqual(t, -1, restart, "the kubelet is restarted on the old version: %v", calls)
			assert.Less(t, indexOf(rest, "systemctl daemon-reload"), restart, "%v", calls)
			assert.NotEqual(t, -1, indexOf(rest[restart:], "curl http://127.0.0.1:10248/healthz"), "and waited for: %v", calls)
			if tc.source == sysextSource {
				assert.Less(t, indexOf(rest, "systemd-sysext refresh"), restart, "the old image merged: %v", calls)
			}
		})
	}
}

// An update whose rollback fails says so and keeps its journal, for the next run.
func TestInPlaceUpdateRollbackFails(t *testing.T) {
	n := newInPlaceNode(t, binariesSource, inPlaceOld, false)
	n.breakStep("upgrade-fails")
	n.breakStep("unhealthy")
	result, output, err := n.update(binariesSource, inPlaceNew, false)
	require.Error(t, err, output)
	assert.Equal(t, "failed: kubeadm upgrade node: error execution phase kubelet-config: the kubelet-config ConfigMap is gone; "+
		"rolling back to v1.33.2 failed too: kubelet health: the kubelet did not answer ok on its health endpoint within 1s", result)
	assert.Equal(t, "swapping from v1.33.2 to v1.34.4\n", n.read(filepath.Join(n.layout.stateDir, "journal")))
}

// A node on the version already, its kubelet healthy, is left as it is.
func TestInPlaceUpdateAtVersion(t *testing.T) {
	for _, source := range []cabpiv1.KubernetesSource{sysextSource, binariesSource} {
		t.Run(string(source), func(t *testing.T) {
			n := newInPlaceNode(t, source, inPlaceNew, true)
			result, output, err := n.update(source, inPlaceNew, true)
			require.NoError(t, err, output)
			assert.Equal(t, "ok "+inPlaceNew, result)
			assert.Equal(t, []string{"curl http://127.0.0.1:10248/healthz"}, n.calls(), "nothing fetched, swapped, run or restarted")
			n.kubernetesAt(source, inPlaceNew, true)
			assert.Equal(t, "old config\n", n.read(n.layout.kubeletConfig))
		})
	}
	t.Run("kubelet not healthy", func(t *testing.T) {
		n := newInPlaceNode(t, binariesSource, inPlaceNew, false)
		n.breakStep("unhealthy")
		result, _, err := n.update(binariesSource, inPlaceNew, false)
		require.Error(t, err)
		assert.Equal(t, "failed: kubelet health: the kubelet did not answer ok on its health endpoint within 1s", result)
		n.kubernetesAt(binariesSource, inPlaceNew, false)
	})
}

// An update killed after its swap (a reboot, the unit killed: here during kubeadm upgrade node)
// is taken up by the next run from its journal: forward to the new version without fetching
// again, or back to the old one when going forward fails.
func TestInPlaceUpdateResumes(t *testing.T) {
	for _, tc := range []struct {
		source   cabpiv1.KubernetesSource
		fails    bool
		want     string
		finalVer string
	}{
		{source: sysextSource, want: "ok v1.34.4", finalVer: inPlaceNew},
		{source: binariesSource, want: "ok v1.34.4", finalVer: inPlaceNew},
		{source: sysextSource, fails: true, finalVer: inPlaceOld,
			want: "failed: kubeadm upgrade node: error execution phase kubelet-config: the kubelet-config ConfigMap is gone; rolled back to v1.33.2"},
		{source: binariesSource, fails: true, finalVer: inPlaceOld,
			want: "failed: kubeadm upgrade node: error execution phase kubelet-config: the kubelet-config ConfigMap is gone; rolled back to v1.33.2"},
	} {
		t.Run(string(tc.source)+map[bool]string{true: ", then failing"}[tc.fails], func(t *testing.T) {
			n := newInPlaceNode(t, tc.source, inPlaceOld, false)
			n.breakStep("upgrade-dies")
			result, output, err := n.update(tc.source, inPlaceNew, false)
			require.Error(t, err, output)
			assert.Empty(t, result, "killed: no result")
			assert.Equal(t, "swapping from v1.33.2 to v1.34.4\n", n.read(filepath.Join(n.layout.stateDir, "journal")))
			n.kubernetesAt(tc.source, inPlaceNew, false) // swapped, kubeadm upgrade node not done
			require.NoError(t, os.Remove(filepath.Join(n.root, "calls")))

			if tc.fails {
				n.breakStep("upgrade-fails")
			}
			result, output, err = n.update(tc.source, inPlaceNew, false)
			assert.Equal(t, tc.want, result, output)
			assert.Equal(t, tc.fails, err != nil, output)
			assert.Contains(t, output, "cabpi: resuming an update that stopped after its backup (swapping from v1.33.2 to v1.34.4)")
			n.kubernetesAt(tc.source, tc.finalVer, false)
			n.finished()
			calls := n.calls()
			assert.NotEqual(t, -1, indexOf(calls, "kubeadm upgrade node --certificate-renewal=false (v1.34.4)"), "%v", calls)
			assert.NotEqual(t, -1, indexOf(calls, "systemctl restart kubelet.service"), "%v", calls)
			for _, c := range calls {
				assert.False(t, strings.HasPrefix(c, "curl "+inPlaceBase), "nothing fetched again: %s", c)
			}
			if tc.fails {
				assert.Equal(t, "old config\n", n.read(n.layout.kubeletConfig))
			} else {
				assert.Equal(t, "upgraded config "+inPlaceNew+"\n", n.read(n.layout.kubeletConfig))
			}
		})
	}
}

// A journal of an update to another version is rolled back before this one starts.
func TestInPlaceUpdateRollsBackAnotherVersionsJournal(t *testing.T) {
	n := newInPlaceNode(t, binariesSource, inPlaceOld, false)
	n.breakStep("upgrade-dies")
	_, output, err := n.update(binariesSource, inPlaceNew, false)
	require.Error(t, err, output)
	n.kubernetesAt(binariesSource, inPlaceNew, false)

	// v1.33.2 again (as though the Machine went back): the old binaries come back from the
	// backup, and the node is then on the version.
	result, output, err := n.update(binariesSource, inPlaceOld, false)
	require.NoError(t, err, output)
	assert.Equal(t, "ok "+inPlaceOld, result)
	assert.Contains(t, output, "cabpi: rolling back an update that stopped after its backup (swapping from v1.33.2 to v1.34.4)")
	n.kubernetesAt(binariesSource, inPlaceOld, false)
	assert.Equal(t, "old config\n", n.read(n.layout.kubeletConfig))
	n.finished()
}
