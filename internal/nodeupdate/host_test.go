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
