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

// Package repository_test checks the files a user, a contributor or a Cluster API maintainer
// looks for in a provider's repository: the license (and that no dependency's forbids shipping
// the manager), the workflows (they call the Makefile, never a copy of its steps), and Tilt's
// tilt-provider.yaml (it agrees with the components).
package repository_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	return root
}

// LICENSE is the Apache License 2.0, as Cluster API's, whole.
func TestLicenseIsApache2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "LICENSE"))
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(data)), " ")
	for _, s := range []string{
		"Apache License Version 2.0, January 2004 http://www.apache.org/licenses/",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"2. Grant of Copyright License.", "3. Grant of Patent License.", "9. Accepting Warranty or Additional Liability.",
		"END OF TERMS AND CONDITIONS",
	} {
		assert.Contains(t, text, s)
	}
}

// makeTargets are the targets the Makefile and its includes define.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "mk", "*.mk"))
	require.NoError(t, err)
	targets := map[string]bool{}
	rule := regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
	for _, f := range append(files, filepath.Join(root, "Makefile")) {
		file, err := os.Open(f)
		require.NoError(t, err)
		s := bufio.NewScanner(file)
		for s.Scan() {
			if m := rule.FindStringSubmatch(s.Text()); m != nil {
				targets[m[1]] = true
			}
		}
		require.NoError(t, file.Close())
	}
	return targets
}

// workflow is the part of a GitHub workflow this test reads.
type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string `json:"name"`
			Uses string `json:"uses"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// Every step of the workflows that runs a command runs one Makefile target (make, or sudo make
// for the real nodes), so that CI on the forge and `bash .ci/run` cannot drift apart; the ci
// workflow runs the stages .ci/run runs, and the release workflow builds and publishes.
func TestWorkflowsCallTheMakefile(t *testing.T) {
	root := repoRoot(t)
	targets := makeTargets(t)
	files, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	called := map[string][]string{}
	command := regexp.MustCompile(`^(?:sudo (?:--preserve-env=\S+ )?)?make ([a-z][a-z0-9-]*)((?: [A-Z_]+=\S+)*)$`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var w workflow
		require.NoError(t, yaml.Unmarshal(data, &w), f)
		for job, j := range w.Jobs {
			for _, step := range j.Steps {
				if step.Run == "" {
					continue
				}
				run := strings.TrimSpace(step.Run)
				m := command.FindStringSubmatch(run)
				if !assert.NotNil(t, m, "%s, job %s, step %q: runs %q, not one Makefile target", filepath.Base(f), job, step.Name, run) {
					continue
				}
				assert.True(t, targets[m[1]], "%s: make %s is not a target of the Makefile", filepath.Base(f), m[1])
				base := strings.TrimSuffix(filepath.Base(f), ".yaml")
				called[base] = append(called[base], m[1])
			}
		}
	}
	ciRun, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	for _, stage := range []string{"deps", "verify-gen", "vet", "lint", "test", "e2e"} {
		assert.Contains(t, string(ciRun), "make "+stage, ".ci/run runs make %s", stage)
		assert.Contains(t, called["ci"], stage, "the ci workflow runs make %s, as .ci/run does", stage)
	}
	for _, stage := range []string{"release", "publish"} {
		assert.Contains(t, called["release"], stage, "the release workflow runs make %s", stage)
	}
}

// tilt-provider.yaml names the image the components run, the manager's Deployment as the
// components name it, and paths that exist.
func TestTiltProvider(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "tilt-provider.yaml"))
	require.NoError(t, err)
	var providers []struct {
		Name   string `json:"name"`
		Config struct {
			Image           string   `json:"image"`
			LiveReloadDeps  []string `json:"live_reload_deps"`
			Label           string   `json:"label"`
			ManagerName     string   `json:"manager_name"`
			KustomizeFolder string   `json:"kustomize_folder"`
			GoMain          string   `json:"go_main"`
		} `json:"config"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &providers))
	require.Len(t, providers, 1)
	p := providers[0]
	assert.Equal(t, "ignition", p.Name, "the provider's name, as clusterctl's configuration names it (README)")
	assert.NotEmpty(t, p.Config.Label)

	manager, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	require.NoError(t, err)
	var deployment struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name  string `json:"name"`
						Image string `json:"image"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	for _, doc := range strings.Split(string(manager), "\n---\n") {
		if strings.Contains(doc, "kind: Deployment") {
			require.NoError(t, yaml.Unmarshal([]byte(doc), &deployment))
		}
	}
	require.NotEmpty(t, deployment.Spec.Template.Spec.Containers)
	var image string
	for _, c := range deployment.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			image = c.Image
		}
	}
	repository, _, _ := strings.Cut(image, ":")
	assert.Equal(t, repository, p.Config.Image, "the image of the components' manager container")

	kustomization, err := os.ReadFile(filepath.Join(root, p.Config.KustomizeFolder, "kustomization.yaml"))
	require.NoError(t, err, "kustomize_folder is a kustomization")
	var k struct {
		NamePrefix string `json:"namePrefix"`
	}
	require.NoError(t, yaml.Unmarshal(kustomization, &k))
	assert.Equal(t, k.NamePrefix+deployment.Metadata.Name, p.Config.ManagerName, "the manager's Deployment as the components name it")
	for _, dep := range append(p.Config.LiveReloadDeps, p.Config.GoMain) {
		_, err := os.Stat(filepath.Join(root, dep))
		assert.NoError(t, err, "%s exists", dep)
	}
}

// licenseKinds are the licenses a module of the manager may have: permissive or, for MPL-2.0,
// weak copyleft at file level, which lets the binary be shipped under Apache-2.0 (the sources of
// the MPL files stay available upstream).
var licenseKinds = []struct {
	name    string
	pattern *regexp.Regexp
}{
	{"Apache-2.0", regexp.MustCompile(`Apache License,? Version 2\.0`)},
	{"MIT", regexp.MustCompile(`Permission is hereby granted, free of charge`)},
	{"BSD", regexp.MustCompile(`Redistribution and use in source and binary forms, with or without`)},
	{"ISC", regexp.MustCompile(`Permission to use, copy, modify, and(/or)? distribute this software for any`)},
	{"MPL-2.0", regexp.MustCompile(`Mozilla Public License,? (Version|v\.) ?2\.0`)},
}

// licensedInHeaders are the modules reviewed as licensed by their files' headers, which ship no
// license file of their own.
var licensedInHeaders = map[string]struct{ file, says, kind string }{
	// A fork of Go's encoding/json (used by Ignition and Butane): Go's BSD-style license.
	"github.com/ajeddeloh/go-json": {file: "decode.go", says: "Use of this source code is governed by a BSD-style", kind: "BSD"},
}

// forbidden are licenses that would forbid shipping the manager as it is.
var forbidden = regexp.MustCompile(`GNU (AFFERO |LESSER )?GENERAL PUBLIC LICENSE|Server Side Public License|Business Source License`)

// Every module the manager is built from has a license file, of a kind that lets the binary be
// shipped: none is (A|L)GPL, SSPL or BUSL, and none is without a license.
func TestDependencyLicenses(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-deps", "-json=Module", ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	require.NoError(t, err)
	type module struct {
		Path    string
		Version string
		Dir     string
		Main    bool
		Replace *module
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dirs := map[string]string{}
	for dec.More() {
		var p struct{ Module *module }
		require.NoError(t, dec.Decode(&p))
		m := p.Module
		if m == nil || m.Main {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	require.NotEmpty(t, dirs)
	kinds := map[string]int{}
	mods := make([]string, 0, len(dirs))
	for m := range dirs {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		dir := dirs[m]
		files, err := filepath.Glob(filepath.Join(dir, "[Ll][Ii][Cc][Ee][Nn][CcSs][Ee]*"))
		require.NoError(t, err)
		copying, err := filepath.Glob(filepath.Join(dir, "COPYING*"))
		require.NoError(t, err)
		files = append(files, copying...)
		if len(files) == 0 {
			path, _, _ := strings.Cut(m, "@")
			header, reviewed := licensedInHeaders[path]
			if assert.True(t, reviewed, "%s has no license file", m) {
				src, err := os.ReadFile(filepath.Join(dir, header.file))
				require.NoError(t, err)
				assert.Contains(t, string(src), header.says, "%s: %s says its license", m, header.file)
				kinds[header.kind]++
			}
			continue
		}
		var kind string
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			text := strings.Join(strings.Fields(string(data)), " ")
			if bad := forbidden.FindString(text); bad != "" {
				t.Errorf("%s: %s is %q: it forbids shipping the manager as it is", m, filepath.Base(f), bad)
			}
			for _, k := range licenseKinds {
				if kind == "" && k.pattern.MatchString(text) {
					kind = k.name
				}
			}
		}
		if assert.NotEmpty(t, kind, "%s: a license this test does not know: review it and add its kind", m) {
			kinds[kind]++
		}
	}
	t.Logf("licenses of the %d modules the manager is built from: %v", len(dirs), kinds)
}
