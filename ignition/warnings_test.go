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

package ignition_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// A key Butane does not know is dropped from the config: the user must hear of it, with its
// place in the document, from every render (Render and the join's Prepare/WithJoinToken alike);
// under strict it is an error instead.
func TestButaneWarningsReachTheOutput(t *testing.T) {
	const snippet = `variant: flatcar
version: 1.0.0
storage:
  filez:
    - path: /etc/motd
      contents:
        inline: hello
`
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Butane = snippet

	out, err := ignition.Render(in)
	require.NoError(t, err)
	require.Len(t, out.Warnings, 1, "one unknown key, one warning")
	w := out.Warnings[0]
	assert.Equal(t, ignition.At(ignition.PartButane), w.Place)
	assert.Equal(t, 4, w.Line, "the line of filez")
	assert.Contains(t, w.Message, "filez")
	assert.True(t, strings.HasPrefix(w.String(), "butane: line 4, column "), w.String())
	assert.NotContains(t, string(out.Data), "/etc/motd", "Butane dropped the misspelt section")

	prepared, err := ignition.Prepare(in)
	require.NoError(t, err)
	assert.Equal(t, out.Warnings, prepared.Output().Warnings)
	withToken, err := prepared.WithJoinToken("abcdef.0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, out.Warnings, withToken.Warnings, "the token swap keeps the warnings")

	in.ButaneStrict = true
	_, err = ignition.Render(in)
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr, "strict: warnings are errors")
	assert.Equal(t, ignition.ErrInvalidButane, ierr.Kind)
	assert.Equal(t, 4, ierr.Line)
}

// A clean snippet renders without warnings: nothing to show, nothing to alarm anyone. Strict
// accepts it, and an empty document, as they are.
func TestCleanButaneHasNoWarnings(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/motd\n      contents:\n        inline: hello\n"
	out, err := ignition.Render(in)
	require.NoError(t, err)
	assert.Empty(t, out.Warnings)

	in.ButaneStrict = true
	strict, err := ignition.Render(in)
	require.NoError(t, err)
	assert.Equal(t, out, strict)

	in = joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Butane, in.ButaneStrict = flatcarSnippet, true
	_, err = ignition.Render(in)
	require.NoError(t, err)

	in = joinInput(cabpiv1.VariantFCOS, "v1.34.0")
	in.ButaneStrict = true
	_, err = ignition.Render(in)
	require.NoError(t, err)
}
