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

package nodeupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The node's host tells a command stopped by a signal from outside (a shutdown) from one that
// failed.
func TestHostRunTellsAnInterruptionFromAFailure(t *testing.T) {
	h := NewHost()
	_, err := h.Run(context.Background(), "sh", "-c", "kill -TERM $$")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInterrupted)
	_, err = h.Run(context.Background(), "sh", "-c", "echo boom >&2; exit 3")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrInterrupted)
	assert.Contains(t, err.Error(), "boom")
	out, err := h.Run(context.Background(), "sh", "-c", "echo ok")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", out)
}
