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

// Command headers checks that every Go file the repository tracks starts with the license
// header of hack/boilerplate.go.txt (after a build constraint, where there is one), as the files
// controller-gen generates do. `make lint` runs it; it exits 1 naming each file without it.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	header, err := os.ReadFile("hack/boilerplate.go.txt")
	if err != nil {
		fmt.Fprintln(os.Stderr, "headers:", err)
		os.Exit(2)
	}
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "headers: listing the Go files:", err)
		os.Exit(2)
	}
	var missing []string
	files := strings.Fields(string(out))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "headers:", err)
			os.Exit(2)
		}
		if !hasHeader(data, header) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "headers: %d files do not start with the license header of hack/boilerplate.go.txt:\n  %s\n",
			len(missing), strings.Join(missing, "\n  "))
		os.Exit(1)
	}
	fmt.Printf("headers: %d Go files carry the license header\n", len(files))
}

// hasHeader reports whether data starts with header, after a build constraint line and the
// blank lines that follow it.
func hasHeader(data, header []byte) bool {
	if bytes.HasPrefix(data, []byte("//go:build ")) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = bytes.TrimLeft(data[i+1:], "\n")
		}
	}
	return bytes.HasPrefix(data, bytes.TrimRight(header, "\n"))
}
