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

package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func config(spec string) string {
	return "apiVersion: bootstrap.cluster.x-k8s.io/v1beta2\nkind: KubeadmConfig\nmetadata:\n  name: c\n  namespace: ns\nspec:\n" + spec
}

// stdin in, a file out; a lossy input writes nothing and exits 2 without --allow-lossy.
func TestMainFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.yaml")
	var stdout, stderr bytes.Buffer
	require.NoError(t, Main([]string{"-f", "-", "-o", out}, strings.NewReader(config("  format: ignition\n")), &stdout, &stderr))
	assert.Empty(t, stdout.String())
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), "kind: IgnitionConfig\n")

	lossy := config("  format: ignition\n  bootCommands: [echo hi]\n")
	out2 := filepath.Join(t.TempDir(), "lossy.yaml")
	err = Main([]string{"-f", "-", "-o", out2}, strings.NewReader(lossy), &stdout, &stderr)
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.NoFileExists(t, out2)
	require.NoError(t, Main([]string{"-f", "-", "-o", out2, "--allow-lossy"}, strings.NewReader(lossy), &stdout, &stderr))
	assert.FileExists(t, out2)

	require.ErrorContains(t, Main(nil, strings.NewReader(""), &stdout, &stderr), "-f is required")
}
