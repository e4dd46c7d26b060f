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
