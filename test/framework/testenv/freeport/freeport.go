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

// Package freeport hands out loopback ports for the test servers that take a port number rather
// than a listener (the manager's metrics endpoint and update extension, Cluster API's extension
// server), such that nothing else takes the port before the server listens on it.
//
// A port the kernel picks (a listener on port 0, closed at once) is free only at that moment:
// the kernel hands it out again, to another process's port-0 listener (the API server of a suite
// that go test -p runs next to this one) or as the local port of an outgoing connection, before
// the server gets to listen. The ports here are below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), which it hands to no one, and below Kubernetes'
// NodePort range; each is locked (flock) by the process that took it until that process exits,
// so test processes running at once never take the same one. Where there is no such range to
// read, the kernel picks, as before.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	// below is where the ports end at the latest: Kubernetes' NodePort range (30000-32767) starts
	// there, which a kube-proxy on this host may answer on loopback.
	below = 30000
	// count is how many ports there are to take from.
	count = 5000
)

var (
	mu sync.Mutex
	// held are the lock files of the ports this process took, kept open (and referenced: an
	// unreferenced os.File is closed by its finalizer, which would release the lock) until it
	// exits.
	held = map[int]*os.File{}
)

// Loopback returns a port of 127.0.0.1 that nothing listens on, and that neither the kernel nor
// another test process taking ports here hands out while this process runs.
func Loopback() (int, error) {
	lo, hi, err := portRange()
	if err != nil {
		return kernelPick()
	}
	dir := lockDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	n := hi - lo
	start := rand.IntN(n)
	for i := range n {
		port := lo + (start+i)%n
		if _, ok := held[port]; ok {
			continue
		}
		f, ok, err := lock(filepath.Join(dir, strconv.Itoa(port)))
		if err != nil {
			return 0, err
		}
		if !ok {
			continue // another process's
		}
		if !listenable(port) {
			_ = f.Close() // a server of something else's
			continue
		}
		held[port] = f
		return port, nil
	}
	return 0, fmt.Errorf("freeport: every port of %d-%d is taken", lo, hi-1)
}

// lockDir holds a lock file for each port taken (one directory per user: another user's files
// would not open).
func lockDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("cabpi-test-ports-%d", os.Getuid()))
}

// portRange is the ports to take from, [lo, hi): count ports below both the ephemeral range and
// the NodePort range.
func portRange() (lo, hi int, err error) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("freeport: ip_local_port_range %q", raw)
	}
	ephemeral, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, 0, fmt.Errorf("freeport: ip_local_port_range: %w", err)
	}
	hi = min(ephemeral, below)
	if lo = hi - count; lo < 1024 {
		return 0, 0, fmt.Errorf("freeport: the ephemeral ports start at %d, leaving too few below", ephemeral)
	}
	return lo, hi, nil
}

// lock takes the lock file path; ok is false when another process holds it.
func lock(path string) (_ *os.File, ok bool, _ error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("freeport: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("freeport: locking %s: %w", path, err)
	}
	return f, true, nil
}

// listenable says whether nothing listens on port now.
func listenable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	return l.Close() == nil
}

// kernelPick is a port the kernel says is free now.
func kernelPick() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	return port, nil
}
