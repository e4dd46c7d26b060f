// Package golden compares rendered output with the golden files under a package's
// testdata/golden, or rewrites them when the test runs with -update (make test-update-golden).
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden (review the diff)")

// Assert compares got with testdata/golden/name, or rewrites the file with -update.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run make test-update-golden and review the diff")
	require.Equal(t, string(want), string(got), "output differs from %s (make test-update-golden rewrites it; review the diff)", path)
}
