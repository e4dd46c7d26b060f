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

package bootcheck

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// Paths on the node that the bootstrap script reads and writes.
const (
	ScriptPath   = "/etc/kubeadm.sh"
	ConfigPath   = "/etc/kubeadm.yml"
	SentinelPath = "/run/cluster-api/bootstrap-success.complete"
	hostnamePath = "/proc/sys/kernel/hostname"
)

// relocated are the node paths (prefixes) that RunScript moves below the applied root, in the
// script's text: everything the fixed parts of the script write or read (the attempt's state and
// what it copies, and kubeadm's directories it looks into), and the metadata the platform agent
// leaves in /run. A path missing here is the host's: the script would write there.
var relocated = []string{ConfigPath, ScriptPath, "/run/", "/opt/bin", hostnamePath,
	"/var/lib/cabpi-bootstrap", "/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/etc/systemd/system/kubelet.service.d"}

// servicePath is systemd's PATH for services (no Environment=PATH): the script starts with it.
var servicePath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"}

// plainPath is a path that needs no quoting in shell text, and no escaping in PATH.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// kubernetesStep names a function of the Kubernetes source steps (spec.kubernetes), which merge a
// system extension or install release binaries: those steps run on bash in the renderer's own
// tests (ignition/kubernetes_script_test.go) and on the real nodes, not here.
const kubernetesStep = "cabpi_check_kubernetes"

// scriptTimeout bounds one run, so that a script that hangs fails its test.
const scriptTimeout = time.Minute

//go:embed stub/kubeadm.sh
var kubeadmStub string

// ScriptOptions describe one run of the bootstrap script.
type ScriptOptions struct {
	KubeadmDir  string // "/opt/bin" or "/usr/bin": where the stub kubeadm is on the node (required)
	KubeadmExit int    // the stub's exit status
	// Env is what the unit adds to the script's environment (Environment=, EnvironmentFile=): the
	// attributes the variant's metadata agent wrote, as systemd hands them over.
	Env map[string]string
	// RunFiles are files in the node's /run when the script starts, standing for what ran before
	// it (another unit's sentinel, a metadata file a command reads).
	RunFiles map[string]string
	Hostname string // the node's hostname; default "bootcheck"
}

// Script is what a run of the bootstrap script left.
type Script struct {
	ExitCode       int           // bash's exit status: 0 is kubeadm.service's success
	Output         string        // stdout and stderr
	KubeadmCalls   []KubeadmCall // one per run of the stub kubeadm, in order
	SentinelExists bool          // the sentinel exists after the run
}

// KubeadmCall is one run of the stub kubeadm. Paths are the node's.
type KubeadmCall struct {
	Path            string   // the stub's own path ($0): which copy ran
	Args            []string // its arguments
	Config          string   // content of the file given with --config (or --config=FILE), read when it ran
	SentinelExisted bool     // whether the sentinel existed when it started (it must not)
}

// RunScript runs the bootstrap script that the config applied under root (ignitionapply.Apply)
// left at /etc/kubeadm.sh, on the host's real bash, as kubeadm.service's ExecStart= would: with
// systemd's PATH for services plus opts.Env, in /, and a stub kubeadm that records how it was
// called. The node's paths the script uses (relocated) are moved below root in the script's text
// (the fixed parts and the commands alike), so that nothing reaches the host and no privilege is
// needed: the script is what ships but for those prefixes. It changes root as the boot would
// (kubeadm.yml removed after a success); apply again for another run. What systemd does around
// the script (loading the unit, its conditions and environment files, /etc noexec) is the
// real-node suite's to prove (docs/adr/029-one-way-to-boot-a-node.md).
//
// The commands run as the test's user: they must write only below the relocated paths.
func RunScript(t testing.TB, root string, opts ScriptOptions) Script {
	t.Helper()
	s, err := runScript(t.TempDir(), root, opts)
	if err != nil {
		t.Fatalf("running %s: %v", ScriptPath, err)
	}
	return s
}

func runScript(work, root string, opts ScriptOptions) (Script, error) {
	if opts.KubeadmDir != "/opt/bin" && opts.KubeadmDir != "/usr/bin" {
		return Script{}, fmt.Errorf("ScriptOptions.KubeadmDir is %q, not /opt/bin or /usr/bin", opts.KubeadmDir)
	}
	if opts.KubeadmExit < 0 || opts.KubeadmExit > 255 {
		return Script{}, fmt.Errorf("ScriptOptions.KubeadmExit %d is not an exit status", opts.KubeadmExit)
	}
	text, err := os.ReadFile(filepath.Join(root, ScriptPath))
	if err != nil {
		return Script{}, fmt.Errorf("the config wrote no bootstrap script: %w", err)
	}
	if bytes.Contains(text, []byte(kubernetesStep)) {
		return Script{}, errors.New("the script has a Kubernetes source step (spec.kubernetes), which installs on the host: not run here")
	}
	// The root's path goes into the script's text: it is reached through a link whose path is
	// plain (a test's temporary directory is named after the test, "${CLUSTER_NAME}" included).
	alias, err := os.MkdirTemp("", "bootcheck-")
	if err != nil {
		return Script{}, err
	}
	defer os.RemoveAll(alias) // the link, not what it points to
	nodeRoot := filepath.Join(alias, "root")
	if !plainPath.MatchString(nodeRoot) {
		return Script{}, fmt.Errorf("the temporary directory %s is not a plain path (letters, digits, /._-)", nodeRoot)
	}
	if err := os.Symlink(root, nodeRoot); err != nil {
		return Script{}, err
	}

	// /run is a tmpfs at boot: it holds only what ran before the script.
	run := filepath.Join(root, "run")
	if _, err := os.Lstat(run); !errors.Is(err, fs.ErrNotExist) {
		return Script{}, fmt.Errorf("%s exists before the boot (the config writes below /run, which a tmpfs hides at boot, or the root was booted already)", run)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.RunFiles)) {
		if path.Clean(name) != name || !strings.HasPrefix(name, "/run/") {
			return Script{}, fmt.Errorf("RunFiles: %q is not a clean path below /run", name)
		}
		if err := writeFile(filepath.Join(root, name), opts.RunFiles[name], 0o644); err != nil {
			return Script{}, err
		}
	}
	hostname := opts.Hostname
	if hostname == "" {
		hostname = "bootcheck"
	}
	if err := writeFile(filepath.Join(root, hostnamePath), hostname+"\n", 0o644); err != nil {
		return Script{}, err
	}

	// The stub is the only kubeadm the script can find: one elsewhere would make a test pass on
	// the wrong binary.
	var nodePath []string
	for _, d := range servicePath {
		nodePath = append(nodePath, nodeRoot+d)
	}
	nodePath = append(nodePath, servicePath...) // the host's, for the tools the commands use
	for _, d := range append(slices.Clone(nodePath), filepath.Join(root, "opt/bin")) {
		if _, err := os.Lstat(filepath.Join(d, "kubeadm")); err == nil {
			return Script{}, fmt.Errorf("a kubeadm exists at %s: the stub must be the only one", filepath.Join(d, "kubeadm"))
		}
	}
	records := filepath.Join(work, "records")
	if err := os.MkdirAll(filepath.Join(records, "calls"), 0o755); err != nil {
		return Script{}, err
	}
	if err := writeFile(filepath.Join(records, "exit"), strconv.Itoa(opts.KubeadmExit)+"\n", 0o644); err != nil {
		return Script{}, err
	}
	stub, err := stubScript(records, nodeRoot+SentinelPath)
	if err != nil {
		return Script{}, err
	}
	if err := writeFile(filepath.Join(root, opts.KubeadmDir, "kubeadm"), stub, 0o755); err != nil {
		return Script{}, err
	}

	pairs := make([]string, 0, 2*len(relocated))
	for _, p := range relocated {
		pairs = append(pairs, p, nodeRoot+p)
	}
	script := filepath.Join(work, "kubeadm.sh")
	if err := writeFile(script, strings.NewReplacer(pairs...).Replace(string(text)), 0o600); err != nil {
		return Script{}, err
	}

	env := []string{"PATH=" + strings.Join(nodePath, ":")}
	for _, k := range slices.Sorted(maps.Keys(opts.Env)) {
		env = append(env, k+"="+opts.Env[k])
	}
	// Output goes to a file, not a pipe, so that a process left in the background cannot hold the
	// wait up.
	output, err := os.Create(filepath.Join(work, "output"))
	if err != nil {
		return Script{}, err
	}
	defer output.Close()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = "/", env, output, output
	runErr := cmd.Run()
	var exitErr *exec.ExitError
	s := Script{}
	switch {
	case ctx.Err() != nil:
		return Script{}, fmt.Errorf("the script did not finish within %s", scriptTimeout)
	case runErr == nil:
	case errors.As(runErr, &exitErr) && exitErr.Exited():
		s.ExitCode = exitErr.ExitCode()
	default:
		return Script{}, fmt.Errorf("bash: %w", runErr)
	}
	out, err := os.ReadFile(output.Name())
	if err != nil {
		return Script{}, err
	}
	s.Output = strings.ReplaceAll(string(out), nodeRoot, "")
	if s.KubeadmCalls, err = readCalls(records, nodeRoot); err != nil {
		return Script{}, err
	}
	_, err = os.Lstat(filepath.Join(root, SentinelPath))
	s.SentinelExists = err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Script{}, err
	}
	return s, nil
}

// stubScript is the stub kubeadm with where it records its calls, and where the sentinel is,
// assigned after its first line.
func stubScript(records, sentinel string) (string, error) {
	first, rest, ok := strings.Cut(kubeadmStub, "\n")
	if !ok {
		return "", errors.New("the stub kubeadm has one line")
	}
	var b strings.Builder
	b.WriteString(first + "\n")
	for _, v := range []struct{ name, value string }{{"records", records}, {"sentinel", sentinel}} {
		quoted, err := syntax.Quote(v.value, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("quoting %s: %w", v.value, err)
		}
		b.WriteString(v.name + "=" + quoted + "\n")
	}
	b.WriteString(rest)
	return b.String(), nil
}

// readCalls reads the stub's records in call order, with the node's paths.
func readCalls(records, root string) ([]KubeadmCall, error) {
	dir := filepath.Join(records, "calls")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var numbers []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			numbers = append(numbers, n)
		}
	}
	slices.Sort(numbers)
	nodePath := func(s string) string { return strings.ReplaceAll(s, root, "") }
	calls := make([]KubeadmCall, 0, len(numbers))
	for _, n := range numbers {
		base := filepath.Join(dir, strconv.Itoa(n))
		field := func(name string) string {
			data, _ := os.ReadFile(base + "." + name) // a missing field is empty
			return string(data)
		}
		_, sentinelErr := os.Lstat(base + ".sentinel")
		if sentinelErr != nil && !errors.Is(sentinelErr, fs.ErrNotExist) {
			return nil, sentinelErr
		}
		call := KubeadmCall{Path: nodePath(field("path")), Config: field("config"), SentinelExisted: sentinelErr == nil}
		if args := field("args"); args != "" {
			for _, a := range strings.Split(strings.TrimSuffix(args, "\x00"), "\x00") {
				call.Args = append(call.Args, nodePath(a))
			}
		}
		calls = append(calls, call)
	}
	return calls, nil
}

func writeFile(name, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(content), mode)
}
