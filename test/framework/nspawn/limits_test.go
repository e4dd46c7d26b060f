package nspawn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The host must have room for what a run writes, whatever share of its disk that is: the
// nodes' kubelets see disks of their own.
func TestCheckHostDisk(t *testing.T) {
	require.NoError(t, CheckHostDisk(t.TempDir(), 1<<20), "a MiB is free here")
	assert.ErrorContains(t, CheckHostDisk(t.TempDir(), 1<<62), "free at least", "no file system here has 4 EiB free")
}
