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

package updatenode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
)

// The termination message is the result line, or the error that kept the update from giving one.
func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		outcome error
		want    string
	}{
		{name: "ok", line: "ok v1.34.4", want: "ok v1.34.4\n"},
		{name: "failed", line: "failed: fetch: x", outcome: &nodeupdate.ResultError{Line: "failed: fetch: x"}, want: "failed: fetch: x\n"},
		{name: "no result", outcome: errors.New("starting the unit: denied"), want: "starting the unit: denied\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "termination-log")
			err := report(log, &bytes.Buffer{}, tc.line, tc.outcome)
			assert.Equal(t, tc.outcome, err)
			data, rerr := os.ReadFile(log)
			require.NoError(t, rerr)
			assert.Equal(t, tc.want, string(data))
		})
	}
}

// Flags that are wrong are refused by Main before anything is written or started.
func TestMainRefusesBadFlags(t *testing.T) {
	var stderr bytes.Buffer
	err := Main([]string{}, &bytes.Buffer{}, &stderr)
	require.EqualError(t, err, "--update is required")
	err = Main([]string{"--update", `{"version": "v1.34.4", "kubernetes": {"source": "image"}}`}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, `source "image" cannot be updated in place`)
	err = Main([]string{"--update", `{"kubernetes": {"source": "sysext"}}`}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "the update has no version")
	err = Main([]string{"--update", "{}", "extra"}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "unexpected arguments")
	err = Main([]string{"apply", "extra"}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "unexpected arguments")
	err = Main([]string{"--nope"}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "unknown flag")
}
