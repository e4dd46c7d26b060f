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

// Package cliinput holds what cabpi's offline commands (render, convert) share: parsing their
// flags and reading the document their -f names. Only the commands import it.
package cliinput

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

// ParseArgs parses a command's args with fs, whose usage is the line usage followed by the
// flags, and reads the document its required -f flag (bound to file) names.
func ParseArgs(fs *pflag.FlagSet, args []string, usage string, file *string, stdin io.Reader) ([]byte, error) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *file == "" {
		fs.Usage()
		return nil, fmt.Errorf("-f is required")
	}
	return readInput(*file, stdin)
}

// readInput reads the file a command's -f names; "-" reads stdin.
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}
