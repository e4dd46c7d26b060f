package controllers

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenExpiries remembers, per workload cluster and token ID, the expiration this manager last
// gave a join token or read from it. A config is reconciled again right after its data is
// stored (its own status change, the Machine taking the data, the Cluster's fan-out), well before
// its token needs anything: with this, those reconciles cost no workload-cluster request, whose
// client is rate limited (--clustercache-client-qps). The memory is only a shortcut: after a
// restart, or once a token is no longer fresh, the token is read again.
type tokenExpiries struct {
	mu sync.Mutex
	m  map[tokenKey]time.Time
}

type tokenKey struct {
	cluster client.ObjectKey
	id      string
}

func (t *tokenExpiries) set(cluster client.ObjectKey, id string, expiration time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[tokenKey]time.Time{}
	}
	t.m[tokenKey{cluster, id}] = expiration
}

func (t *tokenExpiries) forget(cluster client.ObjectKey, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, tokenKey{cluster, id})
}

// get is the expiration remembered for the token, zero when none.
func (t *tokenExpiries) get(cluster client.ObjectKey, id string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[tokenKey{cluster, id}]
}
