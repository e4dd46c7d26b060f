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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test powers a machine off and boots it again while the provider's reconcilers ask, each in
// a goroutine of its own, whether it runs and whether it was ever booted, and run commands in
// it. Under go test -race (make test-unit) this fails if a boot is written or read unguarded.
// The boot is a plain process (sleep) started the way Boot starts systemd-nspawn: what is
// raced on is the machine's record of its boots, not what runs.
func TestBootsWhileAsked(t *testing.T) {
	m := &Machine{Spec: Spec{Name: "asked"}}
	require.False(t, m.Booted(), "never booted")

	stop := make(chan struct{})
	var asking sync.WaitGroup
	for range 2 {
		asking.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = m.Running()
				_ = m.Booted()
				_, _ = m.pid1()
			}
		})
	}
	for range 3 {
		require.NoError(t, m.start([]string{"sleep", "60"}))
		assert.True(t, m.Running(), "up once started")
		require.NoError(t, m.PowerOff(10*time.Second))
		assert.False(t, m.Running(), "down once powered off")
	}
	close(stop)
	asking.Wait()
	assert.True(t, m.Booted(), "booted, though powered off")
}
