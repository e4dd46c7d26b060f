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

package controllers

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configMemory is what this manager remembers of one config between its reconciles. Each part
// caches a fact that has one authority elsewhere, named with it, and is a shortcut, never the
// truth: after a restart it is found again (one render, one event, one read of the join token in
// the workload cluster). What the config's status or its data Secret records is read from them,
// not remembered here: the input digest of the delivered data is status.dataInputsHash (read past
// the cache when the cached copy may be behind, rerender.go), the token the data carries is the
// data Secret's token annotation.
type configMemory struct {
	// failedHash is the digest of inputs that did not render: not rendered again until they
	// change. Authority: the renderer, which gives the same answer for the same input.
	failedHash string
	// notedGeneration is the spec generation last said not to be rendered (after the owner
	// started provisioning), so a config read before its status patch arrived, or reconciled
	// again after a failure kept that patch from recording the generation, does not say it
	// twice. Authority: the events this manager emitted; status.observedGeneration takes over
	// once patched.
	notedGeneration int64
	// tokenExpiration is the expiration of the config's join token tokenID (the one its data
	// carries) that this manager last gave it or read from it. Authority: the token's Secret in
	// the workload cluster. A config is reconciled again right after its data is stored (its own
	// status change, the Machine taking the data, the Cluster's fan-out), well before its token
	// needs anything: with this, those reconciles cost no workload-cluster request, whose client
	// is rate limited (--clustercache-client-qps).
	tokenID         string
	tokenExpiration time.Time
}

// memory holds a configMemory per config. An entry goes when its config is deleted; the token
// part goes once the node joined, when the token needs nothing more.
type memory struct {
	mu      sync.Mutex
	configs map[client.ObjectKey]*configMemory
}

// update runs f on the config's entry, created if needed, under the lock.
func (m *memory) update(config client.ObjectKey, f func(*configMemory)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs == nil {
		m.configs = map[client.ObjectKey]*configMemory{}
	}
	e, ok := m.configs[config]
	if !ok {
		e = &configMemory{}
		m.configs[config] = e
	}
	f(e)
}

// read returns a copy of the config's entry (zero when there is none).
func (m *memory) read(config client.ObjectKey) configMemory {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.configs[config]; ok {
		return *e
	}
	return configMemory{}
}

// forget drops what is remembered of a config that is gone.
func (m *memory) forget(config client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.configs, config)
}

// firstNote is true the first time it is asked for config at generation.
func (m *memory) firstNote(config client.ObjectKey, generation int64) (first bool) {
	m.update(config, func(e *configMemory) {
		first = e.notedGeneration != generation
		e.notedGeneration = generation
	})
	return first
}

// stored records that data was just written: inputs that failed before are forgotten, so that
// they are tried (and reported) again should they come back.
func (m *memory) stored(config client.ObjectKey) {
	m.update(config, func(e *configMemory) { e.failedHash = "" })
}

// failed records the digest of inputs that did not render.
func (m *memory) failed(config client.ObjectKey, hash string) {
	m.update(config, func(e *configMemory) { e.failedHash = hash })
}

// failedWas says whether hash is the digest of the inputs that last failed to render for config.
func (m *memory) failedWas(config client.ObjectKey, hash string) bool {
	return hash != "" && m.read(config).failedHash == hash
}

// setToken records the expiration of the config's join token tokenID (replacing the memory of
// an earlier token: one token per config).
func (m *memory) setToken(config client.ObjectKey, tokenID string, expiration time.Time) {
	m.update(config, func(e *configMemory) { e.tokenID, e.tokenExpiration = tokenID, expiration })
}

// tokenExpiration is the expiration remembered for the config's token tokenID, zero when none.
func (m *memory) tokenExpiration(config client.ObjectKey, tokenID string) time.Time {
	if e := m.read(config); e.tokenID == tokenID {
		return e.tokenExpiration
	}
	return time.Time{}
}

// forgetToken drops the memory of the config's token (gone, or not needed any more).
func (m *memory) forgetToken(config client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.configs[config]; ok {
		e.tokenID, e.tokenExpiration = "", time.Time{}
	}
}
