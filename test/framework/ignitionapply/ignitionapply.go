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

// Package ignitionapply runs the real Ignition engine (ignition-apply) on a rendered config into
// a scratch root, for tests that assert the files a node would get.
package ignitionapply

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// EnvVar names the ignition-apply binary; `make test` sets it.
const EnvVar = "CABPI_IGNITION_APPLY"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the ignition-apply path: $CABPI_IGNITION_APPLY, else what hack/ignition-apply.sh
// builds (once, cached outside the repository).
func Binary() (string, error) {
	binOnce.Do(func() {
		if p := os.Getenv(EnvVar); p != "" {
			binPath = p
			return
		}
		root, err := repoRoot()
		if err != nil {
			binErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "ignition-apply.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		binPath, binErr = strings.TrimSpace(string(out)), err
	})
	return binPath, binErr
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// Apply writes config into a new temporary root with ignition-apply and returns the root.
// ignition-apply refuses passwd sections on a directory root ("cannot apply passwd live"), so
// passwd is removed before applying: tests check users by parsing the config instead. A wrapper
// (ignition.config.replace carrying the config gzipped) is applied as it is, and ignition-apply
// follows it; only when the config it carries has passwd is that config re-wrapped without.
func Apply(t testing.TB, config []byte) string {
	t.Helper()
	return ApplyWith(t, config, Options{})
}

// Options change how ApplyWith applies a config.
type Options struct {
	// IgnoreUnsupported skips storage.disks, raid, luks and filesystems, which cannot be applied to
	// a directory (--ignore-unsupported), and applies the rest. Tests check the skipped sections
	// in the config itself.
	IgnoreUnsupported bool
	// RemoteWithin lets Ignition fetch the config's remote contents (http and https sources),
	// as the initramfs does, when every one of them names an address inside this prefix: the
	// suite's own network. Unset (the zero prefix), ignition-apply runs --offline and refuses
	// remote contents. A source outside the prefix, or a host name, is refused before
	// ignition-apply runs, so that nothing is fetched from off the machine and nothing is resolved.
	RemoteWithin netip.Prefix
	// ImageAccounts gives the root the accounts of a Flatcar image before Ignition runs: the
	// host's /etc/passwd and /etc/group, plus core (500) where the host has none, so that files
	// owned by name ("root:root", "core") resolve as on a node.
	ImageAccounts bool
}

// ApplyWith is Apply with options.
func ApplyWith(t testing.TB, config []byte, opts Options) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ApplyInto(root, config, opts); err != nil {
		t.Fatal(err)
	}
	return root
}

// ApplyInto writes config into the existing root with ignition-apply, as Apply does: the way
// the real-node suite gives a node's root its Ignition before the node boots.
func ApplyInto(root string, config []byte, opts Options) error {
	bin, err := Binary()
	if err != nil {
		return fmt.Errorf("ignition-apply is not available: %w", err)
	}
	stripped, err := withoutPasswd(config)
	if err != nil {
		return err
	}
	stripped, presets, err := withoutInstanceEnables(stripped)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "cabpi-ignition-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.ign")
	if err := os.WriteFile(file, stripped, 0o600); err != nil {
		return err
	}
	if opts.ImageAccounts {
		if err := seedAccounts(root); err != nil {
			return err
		}
	}
	args := []string{"--root", root}
	if opts.RemoteWithin.IsValid() {
		if err := checkRemoteSources(stripped, opts.RemoteWithin); err != nil {
			return err
		}
	} else {
		args = append(args, "--offline")
	}
	if opts.IgnoreUnsupported {
		args = append(args, "--ignore-unsupported")
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, append(args, file)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ignition-apply failed: %w\n%s", err, out.String())
	}
	return appendPresets(root, presets)
}

// ignitionPresetFile is where Ignition writes its preset lines.
const ignitionPresetFile = "etc/systemd/system-preset/20-ignition.preset"

// withoutInstanceEnables takes enabled/disabled off the template and instance units of config
// ("name@.service", "name@x.service") and returns the preset lines Ignition would write for
// them ("enable name@.service x y"). With such a unit, ignition-apply asks the running systemd
// for its version over D-Bus, which a test sandbox has not: the lines are written after the
// apply instead, as Ignition writes them (units.go, createSystemdPresetFile). A wrapped config is
// returned as it is.
func withoutInstanceEnables(config []byte) ([]byte, []string, error) {
	var cfg map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, nil, fmt.Errorf("config is not JSON: %w", err)
	}
	systemd, _ := cfg["systemd"].(map[string]any)
	units, _ := systemd["units"].([]any)
	// As Ignition: one line per template and state, keyed "template-enabled" or
	// "template-disabled", in the order of the sorted keys.
	type preset struct {
		line      string // "enable name@.service" or "disable name@.service"
		instances []string
	}
	presets := map[string]*preset{}
	for _, u := range units {
		unit, _ := u.(map[string]any)
		name, _ := unit["name"].(string)
		enabled, set := unit["enabled"].(bool)
		at, dot := strings.Index(name, "@"), strings.LastIndex(name, ".")
		if !set || at < 0 || dot < at {
			continue
		}
		delete(unit, "enabled")
		template := name[:at+1] + name[dot:]
		key, verb := template+"-disabled", "disable"
		if enabled {
			key, verb = template+"-enabled", "enable"
		}
		p, ok := presets[key]
		if !ok {
			p = &preset{line: verb + " " + template}
			presets[key] = p
		}
		p.instances = append(p.instances, name[at+1:dot])
	}
	if len(presets) == 0 {
		return config, nil, nil
	}
	keys := make([]string, 0, len(presets))
	for k := range presets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, presets[k].line+" "+strings.Join(presets[k].instances, " "))
	}
	out, err := json.Marshal(cfg)
	return out, lines, err
}

// appendPresets adds preset lines to Ignition's preset file under root.
func appendPresets(root string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	path := filepath.Join(root, ignitionPresetFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(f, l); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// imageAccounts are the accounts a Flatcar image has besides the host's: core, its admin user.
var imageAccounts = map[string]string{
	"passwd": "core:x:500:500:Flatcar Admin:/home/core:/bin/bash\n",
	"group":  "core:x:500:\n",
}

// seedAccounts writes the host's /etc/passwd and /etc/group into root, with the image's accounts
// the host lacks.
func seedAccounts(root string) error {
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		return err
	}
	for name, extra := range imageAccounts {
		host, err := os.ReadFile(filepath.Join("/etc", name))
		if err != nil {
			return fmt.Errorf("reading the host's accounts: %w", err)
		}
		account, _, _ := strings.Cut(extra, ":")
		if !bytes.Contains(append([]byte("\n"), host...), []byte("\n"+account+":")) {
			if len(host) > 0 && !bytes.HasSuffix(host, []byte("\n")) {
				host = append(host, '\n')
			}
			host = append(host, extra...)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", name), host, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// withoutPasswd returns config without its passwd section, and the config a wrapper carries in
// a data URL without its own; config as it is when neither has one.
func withoutPasswd(config []byte) ([]byte, error) {
	var cfg map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("config is not JSON: %w", err)
	}
	_, hasPasswd := cfg["passwd"]
	delete(cfg, "passwd")
	ign, _ := cfg["ignition"].(map[string]any)
	conf, _ := ign["config"].(map[string]any)
	replace, _ := conf["replace"].(map[string]any)
	if source, _ := replace["source"].(string); strings.HasPrefix(source, "data:") {
		inner, err := ignition.Unwrap(config)
		if err != nil {
			return nil, err
		}
		stripped, err := withoutPasswd(inner)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(stripped, inner) {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			if _, err := zw.Write(stripped); err != nil {
				return nil, err
			}
			if err := zw.Close(); err != nil {
				return nil, err
			}
			replace["source"] = "data:;base64," + base64.StdEncoding.EncodeToString(gz.Bytes())
			replace["compression"] = "gzip"
			hasPasswd = true
		}
	}
	if !hasPasswd {
		return config, nil
	}
	return json.Marshal(cfg)
}

// UnitEnabled reports whether Ignition enabled unit under root: it writes an "enable <unit>"
// line to its systemd preset file, which systemd applies on first boot.
func UnitEnabled(t testing.TB, root, unit string) bool {
	t.Helper()
	presets, err := filepath.Glob(filepath.Join(root, "etc", "systemd", "system-preset", "*.preset"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range presets {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(line) == "enable "+unit {
				return true
			}
		}
	}
	return false
}

// checkRemoteSources refuses a config with a remote source (any "source" that is not a data URL,
// in the config or in a config it carries compressed) whose host is not an address in prefix.
func checkRemoteSources(config []byte, prefix netip.Prefix) error {
	var doc any
	if err := json.Unmarshal(config, &doc); err != nil {
		return fmt.Errorf("config is not JSON: %w", err)
	}
	var sources []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "source" && !strings.HasPrefix(s, "data:") {
					sources = append(sources, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if inner, err := ignition.Unwrap(config); err == nil && !bytes.Equal(inner, config) {
		if err := checkRemoteSources(inner, prefix); err != nil {
			return err
		}
	}
	for _, s := range sources {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("remote source %q: %w", s, err)
		}
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil || !prefix.Contains(addr) || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("remote source %q is not an http(s) address in %s, the network of the suite: not fetched", s, prefix)
		}
	}
	return nil
}
