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

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// memoryResult is the manager's resident memory with the delivered configs of one namespace,
// without and with unrelated Secrets and ConfigMaps next to them.
type memoryResult struct {
	configs            int
	unrelated          int
	rssBase, rssLoaded int64 // bytes
}

// benchMemory runs the real manager binary (built from this checkout) against the namespace of
// the throughput run with n configs, waits until it reconciled every config and its queue is
// empty, and reads its VmRSS; then adds `unrelated` Secrets and as many ConfigMaps (no
// cluster-name label: nothing cabpi should hold) and measures a fresh manager again.
func benchMemory(ctx context.Context, env *testenv.Environment, fast client.Client, ns string, n, unrelated int) (memoryResult, error) {
	res := memoryResult{configs: n, unrelated: unrelated}
	dir, err := os.MkdirTemp("", "cabpi-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	binary := filepath.Join(dir, "cabpi")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir, build.Stdout, build.Stderr = env.RepoRoot, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return res, fmt.Errorf("building the manager: %w", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	data, err := env.Kubeconfig("envtest")
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return res, err
	}

	if res.rssBase, err = settledRSS(ctx, binary, kubeconfig, ns, n, filepath.Join(dir, "base.log")); err != nil {
		return res, err
	}
	logf("memory: %d configs, RSS %d MiB", n, res.rssBase>>20)
	err = parallel(unrelated, 32, func(i int) error {
		name := fmt.Sprintf("unrelated-%05d", i)
		payload := strings.Repeat("x", 1024) // 1 KiB each, as small application Secrets are
		if err := fast.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{"data": payload}}); err != nil {
			return err
		}
		return fast.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string]string{"data": payload}})
	})
	if err != nil {
		return res, fmt.Errorf("creating unrelated objects: %w", err)
	}
	if res.rssLoaded, err = settledRSS(ctx, binary, kubeconfig, ns, n, filepath.Join(dir, "loaded.log")); err != nil {
		return res, err
	}
	logf("memory: %d configs + %d Secrets + %d ConfigMaps, RSS %d MiB", n, unrelated, unrelated, res.rssLoaded>>20)
	return res, nil
}

// settledRSS starts the manager on ns, waits for n successful reconciles and an empty work
// queue (its metrics endpoint), and returns the largest VmRSS seen over the next 5 seconds.
func settledRSS(ctx context.Context, binary, kubeconfig, ns string, n int, logFile string) (int64, error) {
	metrics, err := testenv.FreeLocalAddress()
	if err != nil {
		return 0, err
	}
	out, err := os.Create(logFile)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, binary, "--kubeconfig="+kubeconfig, "--namespace="+ns, "--webhook-port=0",
		// Plain HTTP without authentication: the bench scrapes with no token.
		"--health-probe-bind-address=0", "--diagnostics-address="+metrics, "--insecure-diagnostics")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	deadline := time.Now().Add(10 * time.Minute)
	for {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the manager did not settle on %d configs in 10 minutes (log: %s)", n, logFile)
		}
		time.Sleep(time.Second)
		m, err := scrape("http://" + metrics + "/metrics")
		if err != nil {
			continue
		}
		reconciled := sum(m, "controller_runtime_reconcile_total", `controller="ignitionconfig"`) -
			sum(m, "controller_runtime_reconcile_total", `controller="ignitionconfig"`, `result="error"`)
		if reconciled >= float64(n) && sum(m, "workqueue_depth", `name="ignitionconfig"`) == 0 {
			break
		}
	}
	var peak int64
	for range 5 {
		rss, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		peak = max(peak, rss)
		time.Sleep(time.Second)
	}
	return peak, nil
}

// sum adds the samples of metric whose labels contain every one of labels.
func sum(m map[string]float64, metric string, labels ...string) float64 {
	var total float64
	for k, v := range m {
		if !strings.HasPrefix(k, metric+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(k, l)
		}
		if all {
			total += v
		}
	}
	return total
}

// scrape reads a Prometheus text endpoint into "name{labels}" → value.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url) //nolint:gosec // a local endpoint of the bench's own process
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] += v
		}
	}
	return out, sc.Err()
}

// vmRSS reads a process's resident set size from /proc.
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
