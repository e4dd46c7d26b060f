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

package freeport

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoopback(t *testing.T) {
	lo, hi, err := portRange()
	if err != nil {
		t.Skipf("no ephemeral port range to stay below here: %v", err)
	}
	a, err := Loopback()
	require.NoError(t, err)
	b, err := Loopback()
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a port is handed out once")
	for _, port := range []int{a, b} {
		assert.True(t, port >= lo && port < hi, "%d is in [%d, %d): below the kernel's ephemeral ports", port, lo, hi)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err, "nothing listens on %d", port)
		require.NoError(t, l.Close())
	}

	// Another process (another open file description) cannot lock a port this one took.
	f, ok, err := lock(filepath.Join(lockDir(), strconv.Itoa(a)))
	require.NoError(t, err)
	if ok {
		_ = f.Close()
	}
	assert.False(t, ok, "port %d is locked while this process runs", a)
}
