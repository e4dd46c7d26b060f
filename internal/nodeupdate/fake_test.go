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

package nodeupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// A node for the state machine's tests: a real temporary root with the node's files, and a host
// whose commands act on it as the real ones would, as far as the update can tell: a binary's (or
// a merged system extension image's) content is its version; kubeadm upgrade node writes the
// kubelet's configuration for its own version; the kubelet is healthy when it runs with a
// configuration for its version and that version is not broken.

const (
	oldVersion = "v1.33.13"
	newVersion = "v1.34.4"
	mirror     = "https://mirror.test/k8s"
)

// crash is what the fake host panics with to cut the power at a chosen point.
type crash struct{ at string }

type fakeHost struct {
	t      *testing.T
	root   string
	sysext bool
	// merged is the image systemd-sysext merged into /usr (sysext nodes).
	merged string
	// running is the version of the kubelet that runs ("" none); broken versions never answer.
	running string
	broken  map[string]bool
	// crashAt: the command (its words) before which the power is cut; crashAfter: after which.
	crashAt, crashAfter string
	calls               []string
}

func (h *fakeHost) file(p string) string {
	data, err := os.ReadFile(filepath.Join(h.root, p))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// binaryVersion is the version of kubeadm, kubelet or kubectl as the node would run it.
func (h *fakeHost) binaryVersion(name string) string {
	if h.sysext {
		return h.file(h.merged)
	}
	return h.file(filepath.Join(nodelayout.BinDir, name))
}

// words is a command as the fakes name it: its name and arguments, spaced.
func words(name string, args []string) string {
	return strings.Join(append([]string{name}, args...), " ")
}

func (h *fakeHost) Run(_ context.Context, name string, args ...string) (string, error) {
	cmd := words(name, args)
	h.calls = append(h.calls, cmd)
	if h.crashAt == cmd {
		panic(crash{at: "before " + cmd})
	}
	out, err := h.run(cmd)
	if h.crashAfter == cmd {
		panic(crash{at: "after " + cmd})
	}
	return out, err
}

func (h *fakeHost) run(cmd string) (string, error) {
	switch cmd {
	case "kubeadm version -o short":
		return h.binaryVersion("kubeadm") + "\n", nil
	case "kubelet --version":
		return "Kubernetes " + h.binaryVersion("kubelet") + "\n", nil
	case "kubectl version --client":
		return "Client Version: " + h.binaryVersion("kubectl") + "\nKustomize Version: v5\n", nil
	case "kubeadm upgrade node --certificate-renewal=false":
		// kubeadm writes the kubelet's files without syncing them.
		v := h.binaryVersion("kubeadm")
		require.NoError(h.t, os.WriteFile(filepath.Join(h.root, nodelayout.KubeletConfig), []byte("for "+v+"\n"), 0o644))
		require.NoError(h.t, os.WriteFile(filepath.Join(h.root, nodelayout.KubeletFlags), []byte("flags for "+v+"\n"), 0o644))
		return "upgraded\n", nil
	case "systemctl restart kubelet.service":
		h.running = h.binaryVersion("kubelet")
		return "", nil
	case "systemd-sysext refresh":
		target, err := os.Readlink(filepath.Join(h.root, nodelayout.SysextLink))
		if err != nil {
			return "", err
		}
		h.merged = target
		return "", nil
	case "systemctl daemon-reload":
		return "", nil
	}
	return "", fmt.Errorf("the fake host does not know %q", cmd)
}

func (h *fakeHost) Healthy(context.Context) error {
	if h.running == "" || h.broken[h.running] || h.file(nodelayout.KubeletConfig) != "for "+h.running {
		return fmt.Errorf("kubelet %s does not answer", h.running)
	}
	return nil
}

// fakeMirror serves files by URL; anything else is a 404.
type fakeMirror map[string][]byte

func (m fakeMirror) Get(_ context.Context, url string) (io.ReadCloser, error) {
	data, ok := m[url]
	if !ok {
		return nil, &NotFoundError{URL: url, Status: 404}
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// write puts a file on the node's root.
func write(t *testing.T, root, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content+"\n"), mode))
}

// testNode is a node at oldVersion whose Kubernetes comes from k, the mirror serving newVersion
// (and oldVersion), and the update to newVersion.
type testNode struct {
	t      *testing.T
	root   string
	host   *fakeHost
	mirror fakeMirror
	update Update
	synced []string
}

func newTestNode(t *testing.T, k cabpiv1.KubernetesSpec) *testNode {
	t.Helper()
	root := t.TempDir()
	tn := &testNode{t: t, root: root, mirror: fakeMirror{}, update: Update{Version: newVersion, Kubernetes: k, Digests: nodelayout.Digests{}}}
	h := &fakeHost{t: t, root: root, sysext: k.Source == cabpiv1.KubernetesSourceSysext, running: oldVersion, broken: map[string]bool{}}
	tn.host = h
	write(t, root, nodelayout.KubeletConfig, "for "+oldVersion, 0o644)
	write(t, root, nodelayout.KubeletFlags, "flags for "+oldVersion, 0o644)
	if h.sysext {
		for _, v := range []string{oldVersion, newVersion} {
			l, err := nodelayout.SysextFor(k, v)
			require.NoError(t, err)
			image := []byte(v + "\n")
			tn.mirror[l.ImageURL] = image
			if v == newVersion {
				tn.update.Digests[l.Image] = digestOf(image) // the pin the extension sends
			}
			tn.mirror[l.TransferURL] = []byte("[Transfer]\n# " + l.Transfer + " from " + l.BaseURL + "\n")
			if v == oldVersion {
				write(t, root, l.ImagePath, v, 0o644)
				require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(nodelayout.SysextLink)), 0o755))
				require.NoError(t, os.Symlink(l.ImagePath, filepath.Join(root, nodelayout.SysextLink)))
				h.merged = l.ImagePath
				if k.Sysext.Sysupdate {
					write(t, root, l.TransferPath, "[Transfer]\n# "+l.Transfer+" from "+l.BaseURL, 0o644)
				}
			}
		}
	} else {
		for _, v := range []string{oldVersion, newVersion} {
			for _, d := range nodelayout.BinariesFor(k, v).Downloads() {
				data := []byte(v + "\n")
				tn.mirror[d.URL] = data
				if v == newVersion {
					tn.update.Digests[d.Rel] = digestOf(data) // the pin the extension sends
				}
				if v == oldVersion {
					write(t, root, filepath.Join(nodelayout.BinDir, d.Name), v, 0o755)
				}
			}
		}
	}
	return tn
}

// node is a fresh Node of the test node (a new process, as after a crash or a reboot).
func (tn *testNode) node() *Node {
	return New(tn.host, tn.mirror, Options{Root: tn.root, HealthTimeout: 1, HealthEvery: 1,
		Synced: func(p string) { tn.synced = append(tn.synced, p) }})
}

// reboot is what a reboot does to the fake host: the kubelet stops, systemd-sysext merges the
// linked image.
func (tn *testNode) reboot() {
	tn.host.running = ""
	if tn.host.sysext {
		target, err := os.Readlink(filepath.Join(tn.root, nodelayout.SysextLink))
		require.NoError(tn.t, err)
		tn.host.merged = target
	}
	tn.host.crashAt, tn.host.crashAfter = "", ""
}

// cut runs f and reports whether it was cut by a crash.
func cut(f func()) (at string) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crash)
			if !ok {
				panic(r)
			}
			at = c.at
		}
	}()
	f()
	return ""
}

// assertAt: the node runs version and keeps nothing of an update (journal, backup, downloads,
// boot units).
func (tn *testNode) assertAt(version string) {
	t := tn.t
	t.Helper()
	require.NoError(t, tn.node().confirm(context.Background(), Update{Version: version, Kubernetes: tn.update.Kubernetes}), "the node runs %s", version)
	require.Equal(t, "for "+version, tn.host.file(nodelayout.KubeletConfig), "the kubelet's configuration is %s's", version)
	require.Equal(t, version, tn.host.running, "the kubelet runs %s", version)
	for _, p := range []string{journalPath, backupDir, stageDir, filepath.Join(nodelayout.SystemdUnitDir, ResumeUnit), filepath.Join(wantsDir, FinishUnit)} {
		_, err := os.Lstat(filepath.Join(tn.root, p))
		require.True(t, os.IsNotExist(err), "%s is gone", p)
	}
}

func (tn *testNode) result() string { return tn.host.file(resultPath) }
