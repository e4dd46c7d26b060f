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

// Command layers checks the import graph of the module against its layers, and that each
// imported package has one alias across the project. `make lint` runs it; it exits 1 on any
// violation, naming the importing package (or file) and the import.
//
// The layers, lowest first, are in layerTable: a package's non-test files may import only
// packages of lower layers (and packages below themselves in the same folder family where
// layerTable allows peers). Independent of layers: only main imports the commands (cmd/...),
// and no non-test file outside test/ and hack/ imports the test infrastructure (test/...).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	pkgs, err := listPackages()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	violations, err := check(pkgs, readImportNames)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	for _, v := range violations {
		fmt.Fprintln(os.Stderr, v)
	}
	if len(violations) > 0 {
		fmt.Fprintf(os.Stderr, "layers: %d violation(s); docs/architecture.md has the layers\n", len(violations))
		os.Exit(1)
	}
	fmt.Printf("layers: %d packages, imports and aliases as the layers say\n", len(pkgs))
}

// listPackages asks go list for every package of the module with its imports and files.
func listPackages() ([]Package, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	dec := json.NewDecoder(bytesReader(out))
	var pkgs []Package
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}
