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

// Package convert is `cabpi convert`: it turns Cluster API's KubeadmConfig and
// KubeadmConfigTemplate into IgnitionConfig and IgnitionConfigTemplate (the conversion itself is
// internal/convert; this is its command line).
//
// What cannot be carried faithfully is reported on stderr, one `OBJECT: PATH: why` line per
// field, and makes the command exit 2 without output unless --allow-lossy is given
// (docs/adr/016-convert.md has the mapping table).
package convert

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/internal/cliinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/convert"
)

// ExitLossy is the exit status when fields could not be converted and --allow-lossy was not given.
const ExitLossy = 2

// Options are the command's flags.
type Options struct {
	File       string
	Out        string
	AllowLossy bool
}

// ExitError is an error with the exit status the command ends with.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string { return e.Message }

// ExitCode is the process exit status for this error.
func (e *ExitError) ExitCode() int { return e.Code }

// Main runs `cabpi convert` with args: the converted stream goes to stdout (or --output), what
// could not be converted, notes and rendering warnings to stderr.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	opts := Options{}
	fs := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVarP(&opts.File, "file", "f", "", "YAML stream with KubeadmConfig and KubeadmConfigTemplate objects ('-' reads stdin)")
	fs.StringVarP(&opts.Out, "output", "o", "", "write the converted stream to this file instead of stdout")
	fs.BoolVar(&opts.AllowLossy, "allow-lossy", false, "write the output and exit 0 even when some fields could not be converted (they are still listed on stderr)")
	input, err := cliinput.ParseArgs(fs, args, "Usage: cabpi convert -f cluster.yaml [-o converted.yaml] [--allow-lossy]", &opts.File, stdin)
	if err != nil {
		return err
	}
	res, err := convert.Convert(input)
	if err != nil {
		return err
	}
	for _, f := range res.Findings {
		fmt.Fprintln(stderr, f.String())
	}
	if n := res.Lossy(); n > 0 && !opts.AllowLossy {
		return &ExitError{Code: ExitLossy, Message: fmt.Sprintf(
			"%d field(s) above cannot be converted faithfully; nothing was written. Rerun with --allow-lossy to write the output without them", n)}
	}
	if opts.Out != "" {
		if err := os.WriteFile(opts.Out, res.Output, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", opts.Out, err)
		}
		return nil
	}
	_, err = io.Copy(stdout, bytes.NewReader(res.Output))
	return err
}
