package nspawn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The host's disk must keep the kubelets' 15% once the run has written what it writes.
func TestDiskShortfall(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name             string
		size, free, need uint64
		short            uint64
	}{
		{"plenty", 100 * gib, 50 * gib, 10 * gib, 0},
		{"exactly enough", 100 * gib, 25 * gib, 10 * gib, 0},
		{"the run would cross 15%", 100 * gib, 20 * gib, 10 * gib, 5 * gib},
		{"below 15% already", 100 * gib, 10 * gib, 0, 5 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.short, diskShortfall(tc.size, tc.free, tc.need))
		})
	}
	assert.ErrorContains(t, CheckHostDisk(t.TempDir(), 1<<62), "DiskPressure", "no file system here keeps 15% after 4 EiB")
}
