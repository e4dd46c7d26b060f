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

package nodeupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// systemPath is where the node's own commands are (systemctl, systemd-sysext, and kubeadm and
// the kubelet once a system extension is merged into /usr).
const systemPath = "/usr/sbin:/usr/bin:/sbin:/bin"

// nodeHost is the node itself: its commands and the kubelet's health endpoint.
type nodeHost struct {
	path   string
	client *http.Client
}

// NewHost is the node's Host: the release binaries in the bin directory come first on its PATH,
// as first boot installs and runs them (a sysext node has none there).
func NewHost() Host {
	return &nodeHost{path: nodelayout.BinDir + ":" + systemPath, client: &http.Client{Timeout: 5 * time.Second}}
}

func (h *nodeHost) Run(ctx context.Context, name string, args ...string) (string, error) {
	// Resolved against the node's PATH, not the process's.
	resolved := name
	for _, dir := range strings.Split(h.path, ":") {
		if candidate := dir + "/" + name; isExecutable(candidate) {
			resolved = candidate
			break
		}
	}
	cmd := exec.CommandContext(ctx, resolved, args...)
	cmd.Env = append(os.Environ(), "PATH="+h.path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() &&
			(ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGHUP) {
			// Stopped from outside (a shutdown signals the unit's every process), before
			// this process's own SIGTERM ended its context.
			return string(out), fmt.Errorf("%s %s: %w (%s)", name, strings.Join(args, " "), ErrInterrupted, ws.Signal())
		}
	}
	if err != nil {
		last := strings.TrimSpace(string(out))
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, last)
	}
	return string(out), nil
}

func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

func (h *nodeHost) Healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, nodelayout.KubeletHealthURL, nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("the kubelet's health endpoint answered %d %q", resp.StatusCode, body)
	}
	return nil
}

// httpFetcher downloads over HTTP(S), retrying what may pass (a connection lost, a 5xx).
type httpFetcher struct {
	client   *http.Client
	attempts int
	pause    time.Duration
}

// downloadTimeout bounds one download (a system extension image is some 100 MB).
const downloadTimeout = 15 * time.Minute

// NewFetcher is the node's Fetcher.
func NewFetcher() Fetcher {
	return &httpFetcher{client: &http.Client{Timeout: downloadTimeout}, attempts: 4, pause: 2 * time.Second}
}

func (f *httpFetcher) Get(ctx context.Context, url string) (io.ReadCloser, error) {
	var last error
	for attempt := 0; attempt < f.attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(f.pause << (attempt - 1)):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := f.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			return resp.Body, nil
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			resp.Body.Close()
			return nil, &NotFoundError{URL: url, Status: resp.StatusCode}
		}
		resp.Body.Close()
		last = fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil, last
}
