package controllers

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inputsMemory remembers, per config, two input digests this manager saw, so that a changed
// digest costs one render, not one per reconcile:
//   - lastStored: the digest of the data this manager last wrote. The config in the cache may
//     not show the status patch that recorded it yet; a reconcile seeing that digest again
//     records it instead of rendering the same data a second time.
//   - lastFailed: inputs that did not render. They are not rendered again until they change.
//
// It also remembers the spec generation last said not to be rendered (after the line), so a
// config read before its status patch arrived does not say it twice.
//
// Like tokenExpiries, it is only a shortcut: after a restart each is found again (one render,
// one event).
type inputsMemory struct {
	mu         sync.Mutex
	lastStored map[client.ObjectKey]string
	lastFailed map[client.ObjectKey]string
	lastNoted  map[client.ObjectKey]int64
}

// firstNote is true the first time it is asked for config at generation.
func (m *inputsMemory) firstNote(config client.ObjectKey, generation int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastNoted == nil {
		m.lastNoted = map[client.ObjectKey]int64{}
	}
	if m.lastNoted[config] == generation {
		return false
	}
	m.lastNoted[config] = generation
	return true
}

func (m *inputsMemory) stored(config client.ObjectKey, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastStored == nil {
		m.lastStored = map[client.ObjectKey]string{}
	}
	m.lastStored[config] = hash
	delete(m.lastFailed, config)
}

func (m *inputsMemory) failed(config client.ObjectKey, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastFailed == nil {
		m.lastFailed = map[client.ObjectKey]string{}
	}
	m.lastFailed[config] = hash
}

// storedWas and failedWas say whether hash is the digest last stored, or last failed, for config.
func (m *inputsMemory) storedWas(config client.ObjectKey, hash string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.lastStored[config]
	return ok && h == hash
}

func (m *inputsMemory) failedWas(config client.ObjectKey, hash string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.lastFailed[config]
	return ok && h == hash
}

// forget drops what is remembered of a config that is gone.
func (m *inputsMemory) forget(config client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.lastStored, config)
	delete(m.lastFailed, config)
	delete(m.lastNoted, config)
}
