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
