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
