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

package main

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Package is what go list -json says of one package.
type Package struct {
	ImportPath   string
	Dir          string
	Module       *struct{ Path string }
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// layer is a set of packages, named by a folder of the module: "ignition" is that package and
// everything below it, "ignition/" only what is below it, "" the module's root package alone.
type layer struct {
	folder string
	rank   int
	// peers lets packages of this layer import each other (a family of helpers that build on
	// each other, such as the test framework's harness, bootcheck and ignition-apply).
	peers bool
}

// layerTable is the house, lowest first: a package may import only from a lower rank.
var layerTable = []layer{
	{folder: "apis", rank: 0},                           // API types
	{folder: "ignition/internal", rank: 1, peers: true}, // small helpers the renderer and its translations share
	{folder: "internal/nodelayout", rank: 1},            // where a node's Kubernetes lives: first boot's and the update's
	{folder: "ignition/", rank: 2},                      // translations the renderer builds on (ignition/clc)
	{folder: "ignition", rank: 3},                       // the pure renderer
	{folder: "internal/configinput", rank: 4},           // domain: spec + references → renderer input
	{folder: "internal/metrics", rank: 4},               // infrastructure
	{folder: "internal/secretcache", rank: 4},           // infrastructure
	{folder: "internal/ociimage", rank: 4},              // infrastructure: OCI images without an engine
	{folder: "internal/publish", rank: 4},               // infrastructure: a release image pushed by digest and signed (docs/adr/047)
	{folder: "internal/nodeupdate", rank: 4},            // the in-place update's node side and its protocol (docs/adr/043)
	{folder: "internal/convert", rank: 5},               // KubeadmConfig → IgnitionConfig
	{folder: "internal/inplace", rank: 5},               // the in-place update extension (docs/adr/035)
	{folder: "controllers", rank: 6},                    // the reconciler
	{folder: "webhooks", rank: 6},                       // admission
	{folder: "internal/setup", rank: 7},                 // the one wiring of manager and tests
	{folder: "test/framework", rank: 8, peers: true},    // test infrastructure
	{folder: "cmd/internal", rank: 9, peers: true},      // what the commands share
	{folder: "cmd", rank: 10},                           // the commands
	{folder: "", rank: 11},                              // main: dispatches to the commands
	{folder: "test", rank: 12},                          // the suites
	{folder: "hack", rank: 12},                          // tools for developers and CI
}

// requiredAlias is the alias an import must have wherever it is imported, where the package's
// own name would be ambiguous (several API versions called v1beta2 or v1alpha1).
var requiredAlias = map[string]string{
	"./apis/v1alpha1": "cabpiv1", // ./ is the module's own
	"sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2": "kubeadmv1",
	"sigs.k8s.io/cluster-api/api/core/v1beta2":              "clusterv1",
}

// importName is one import of one file: its path and the name it is given ("" when none).
type importName struct {
	path, name string
}

// nameReader reads the imports of one Go file.
type nameReader func(file string) ([]importName, error)

// readImportNames parses the imports of a Go file.
func readImportNames(file string) ([]importName, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []importName
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		n := ""
		if spec.Name != nil {
			n = spec.Name.Name
		}
		out = append(out, importName{path: p, name: n})
	}
	return out, nil
}

// layerOf finds the layer of a package by its path inside the module (the longest folder wins).
func layerOf(rel string) (layer, bool) {
	best, found := layer{}, false
	for _, l := range layerTable {
		if !inFolder(rel, l.folder) {
			continue
		}
		if !found || len(l.folder) > len(best.folder) {
			best, found = l, true
		}
	}
	return best, found
}

// inFolder reports whether the package at rel belongs to folder (see layer.folder).
func inFolder(rel, folder string) bool {
	switch {
	case folder == "":
		return rel == ""
	case strings.HasSuffix(folder, "/"):
		return strings.HasPrefix(rel, folder)
	}
	return rel == folder || strings.HasPrefix(rel, folder+"/")
}

// check returns every violation of the layers and of the aliases, sorted.
func check(pkgs []Package, readNames nameReader) ([]string, error) {
	var out []string
	aliases := map[string]map[string]string{} // import path → name → a file using it
	for _, p := range pkgs {
		if p.Module == nil {
			return nil, fmt.Errorf("package %s is in no module", p.ImportPath)
		}
		mod := p.Module.Path
		rel := relative(mod, p.ImportPath)
		own, ok := layerOf(rel)
		if !ok {
			out = append(out, fmt.Sprintf("%s: in no layer; add its folder to layerTable (hack/layers)", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			irel, inModule := relativeIn(mod, imp)
			if !inModule {
				continue
			}
			if v := importViolation(rel, own, irel, false); v != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, v))
			}
		}
		for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			irel, inModule := relativeIn(mod, imp)
			if !inModule || irel == rel {
				continue
			}
			if v := importViolation(rel, own, irel, true); v != "" {
				out = append(out, fmt.Sprintf("%s (tests) imports %s: %s", p.ImportPath, imp, v))
			}
		}
		for _, files := range [][]string{p.GoFiles, p.TestGoFiles, p.XTestGoFiles} {
			for _, f := range files {
				if strings.HasPrefix(f, "zz_generated") {
					continue // generated: its tool picks the names
				}
				file := filepath.Join(p.Dir, f)
				names, err := readNames(file)
				if err != nil {
					return nil, err
				}
				for _, n := range names {
					if n.name == "_" || n.name == "." {
						continue
					}
					if n.name == path.Base(n.path) {
						n.name = "" // the package's own name, given again
					}
					key := n.path
					if r, inModule := relativeIn(mod, n.path); inModule {
						key = "./" + r
					}
					if want, ok := requiredAlias[key]; ok && n.name != want {
						out = append(out, fmt.Sprintf("%s: imports %s as %q; it is %s everywhere", file, n.path, n.name, want))
						continue
					}
					if aliases[n.path] == nil {
						aliases[n.path] = map[string]string{}
					}
					if _, seen := aliases[n.path][n.name]; !seen {
						aliases[n.path][n.name] = file
					}
				}
			}
		}
	}
	for path, names := range aliases {
		if len(names) < 2 {
			continue
		}
		var uses []string
		for n, file := range names {
			if n == "" {
				n = "(no alias)"
			}
			uses = append(uses, fmt.Sprintf("%s in %s", n, file))
		}
		sort.Strings(uses)
		out = append(out, fmt.Sprintf("%s is imported under %d names: %s", path, len(names), strings.Join(uses, "; ")))
	}
	sort.Strings(out)
	return out, nil
}

// importViolation says what is wrong with the package at rel (in layer own) importing the
// package at irel, "" when nothing is. test says the import is made by test files only.
func importViolation(rel string, own layer, irel string, test bool) string {
	isCommand := inFolder(irel, "cmd")
	switch {
	case isCommand && !(rel == "" || inFolder(rel, "cmd")):
		return "only main (and the commands, of what they share) import a command"
	case inFolder(irel, "test") && !inFolder(irel, "test/framework"):
		return "a test suite is imported by nothing"
	case inFolder(irel, "test") && !test && !inFolder(rel, "test") && !inFolder(rel, "hack"):
		return "the test framework is imported only by tests (and hack/)"
	case test:
		return "" // tests sit above what they test
	}
	target, ok := layerOf(irel)
	if !ok {
		return "the imported package is in no layer"
	}
	if target.rank < own.rank || (target.rank == own.rank && own.peers && target.folder == own.folder) {
		return ""
	}
	return fmt.Sprintf("layer %q (rank %d) may not import layer %q (rank %d)", own.folder, own.rank, target.folder, target.rank)
}

// relative is the package's path inside the module ("" for the module's root package).
func relative(mod, importPath string) string {
	rel, _ := relativeIn(mod, importPath)
	return rel
}

// relativeIn is relative for an import that may be outside the module (then false).
func relativeIn(mod, importPath string) (string, bool) {
	if importPath == mod {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, mod+"/")
	return rel, ok
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
