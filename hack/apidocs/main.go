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

// Command apidocs writes the API reference of the guide, docs/guide/api.md, from the Go types of
// apis/v1alpha1: every field of IgnitionConfig and IgnitionConfigTemplate with its path, type,
// doc comment and validation (the kubebuilder markers controller-gen turns into the CRD schema),
// and every condition reason of conditions.go. `make generate` runs it, so `make verify-gen`
// (CI) fails when the reference is stale; its test checks the reference against the CRDs.
//
// Usage: go run ./hack/apidocs [-apis apis/v1alpha1] [-out docs/guide/api.md]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	apis := flag.String("apis", "apis/v1alpha1", "directory of the API package")
	out := flag.String("out", "docs/guide/api.md", "file to write ('-' for stdout)")
	flag.Parse()
	if err := run(*apis, *out); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(apisDir, out string) error {
	api, err := loadAPI(apisDir)
	if err != nil {
		return err
	}
	doc, err := api.reference()
	if err != nil {
		return err
	}
	data := renderMarkdown(doc)
	if out == "-" {
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("writing the reference: %w", err)
	}
	return nil
}
