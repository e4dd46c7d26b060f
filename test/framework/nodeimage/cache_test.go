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

package nodeimage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Using or building an image prunes the images of its kind no run used for keepUnused, and only
// those: a recent one of its kind and the images of other kinds stay; a used image counts as
// recent again.
func TestCachedPrunesUnusedImagesOfItsKind(t *testing.T) {
	cache := t.TempDir()
	b := Builder{CacheDir: cache}
	old := time.Now().Add(-2 * keepUnused)
	image := func(name string, lastUse time.Time) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(cache, name, "rootfs"), 0o755))
		marker := filepath.Join(cache, name, "complete")
		require.NoError(t, os.WriteFile(marker, nil, 0o644))
		require.NoError(t, os.Chtimes(marker, lastUse, lastUse))
	}
	image("flatcar-cp-v1.34.4-000000000001", old)
	image("flatcar-cp-v1.34.4-000000000002", time.Now())
	image("flatcar-cp-v1.34.4-000000000003", old)
	image("flatcar-cp-v1.33.13-000000000004", old)
	image("flatcar-stock-000000000005", old)
	image("flatcar-cp-v1.34.4-rc.1-000000000006", old)

	// Using image 3 makes it recent, and prunes image 1.
	_, err := b.cached(filepath.Join(cache, "flatcar-cp-v1.34.4-000000000003"), func(string) error {
		t.Fatal("a complete image is not built again")
		return nil
	})
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(cache, "flatcar-cp-v1.34.4-000000000001"), "an image of the used one's kind, unused for long")
	image("flatcar-cp-v1.34.4-000000000007", old)

	root, err := b.cached(filepath.Join(cache, "flatcar-cp-v1.34.4-0000000000ff"), func(root string) error {
		return os.WriteFile(filepath.Join(root, "built"), nil, 0o644)
	})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(root, "built"))

	left, err := os.ReadDir(cache)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{
		"flatcar-cp-v1.34.4-000000000002",      // used recently
		"flatcar-cp-v1.34.4-000000000003",      // used just now
		"flatcar-cp-v1.34.4-0000000000ff",      // built
		"flatcar-cp-v1.33.13-000000000004",     // another version
		"flatcar-stock-000000000005",           // another flavor
		"flatcar-cp-v1.34.4-rc.1-000000000006", // another version
	}, names, "only the unused image of the built one's kind is pruned")
}
