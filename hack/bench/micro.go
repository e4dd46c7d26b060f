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
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/webhooks"
)

// butaneSnippet is a Butane document of about size bytes: one text file (lines that differ,
// like a real configuration file, so it compresses as text does, not as a run of one byte)
// and one unit. Built as a typed document and marshalled.
func butaneSnippet(variant cabpiv1.Variant, size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size-600; i++ {
		fmt.Fprintf(&b, "setting.%d.name = value-%d # comment %x\n", i, i*7919, i*104729)
	}
	version := "1.0.0"
	if variant == cabpiv1.VariantFCOS {
		version = "1.5.0"
	}
	doc := map[string]any{
		"variant": string(variant),
		"version": version,
		"storage": map[string]any{"files": []any{map[string]any{
			"path": "/etc/bench/settings.conf", "mode": 0o644,
			"contents": map[string]any{"inline": b.String()},
		}}},
		"systemd": map[string]any{"units": []any{map[string]any{
			"name": "bench.service", "enabled": true,
			"contents": "[Unit]\nDescription=bench\n[Service]\nType=oneshot\nExecStart=/usr/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		}}},
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// renderCase is one renderer input of the render benchmark.
type renderCase struct {
	role    ignition.Role
	variant cabpiv1.Variant
	snippet bool
}

func (c renderCase) String() string {
	s := fmt.Sprintf("%s/%s", c.role, c.variant)
	if c.snippet {
		s += "+4KiB"
	}
	return s
}

type renderResult struct {
	name                 string
	nsPerOp, p50, p99    time.Duration
	bytesPerOp, allocsOp int64
	outBytes             int
}

// benchRender renders each case through configinput.Offline, the path `cabpi render` and the
// webhook take (placeholders of real length for token and certificates).
func benchRender() ([]renderResult, error) {
	var out []renderResult
	for _, role := range []ignition.Role{ignition.RoleWorkerJoin, ignition.RoleControlPlaneJoin, ignition.RoleInit} {
		for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
			for _, snippet := range []bool{false, true} {
				c := renderCase{role, variant, snippet}
				spec := &cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.Variant(variant)}
				if snippet {
					spec.Butane.Inline = butaneSnippet(variant, 4096)
				}
				in, err := configinput.Offline(context.Background(), spec, role, configinput.DefaultKubernetesVersion, configinput.OfflineResolver{})
				if err != nil {
					return nil, fmt.Errorf("%s: %w", c, err)
				}
				first, err := ignition.Render(in)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", c, err)
				}
				r := testing.Benchmark(func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := ignition.Render(in); err != nil {
							b.Fatal(err)
						}
					}
				})
				times := make([]time.Duration, 201)
				for i := range times {
					start := time.Now()
					_, _ = ignition.Render(in)
					times[i] = time.Since(start)
				}
				slices.Sort(times)
				out = append(out, renderResult{
					name: c.String(), nsPerOp: time.Duration(r.NsPerOp()), p50: times[100], p99: times[198],
					bytesPerOp: r.AllocedBytesPerOp(), allocsOp: r.AllocsPerOp(), outBytes: first.Size.Bytes,
				})
				logf("render %s: %s", c, r)
			}
		}
	}
	return out, nil
}

type admissionResult struct {
	name     string
	p50, max time.Duration
	runs     int
	verdict  string
}

// benchAdmission times the IgnitionConfig webhook (defaulting and validation, as the webhook
// server calls them) for a worker and a control-plane config with a 4 KiB and a 1 MiB snippet.
// The API server's own share of a request (a few milliseconds) is not included.
func benchAdmission(ctx context.Context) []admissionResult {
	w := &webhooks.IgnitionConfigWebhook{}
	var out []admissionResult
	for _, size := range []int{4 << 10, 1 << 20} {
		for _, controlPlane := range []bool{false, true} {
			cfg := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "admission"}}
			cfg.Spec.Butane.Inline = butaneSnippet(cabpiv1.VariantFlatcar, size)
			name := fmt.Sprintf("worker, %s snippet", humanSize(size))
			if controlPlane {
				cfg.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
				name = fmt.Sprintf("control plane, %s snippet", humanSize(size))
			}
			runs := 41
			if size > 64<<10 {
				runs = 7
			}
			times := make([]time.Duration, runs)
			verdict := "admitted"
			for i := range times {
				obj := cfg.DeepCopy()
				start := time.Now()
				_ = w.Default(ctx, obj)
				_, err := w.ValidateCreate(ctx, obj)
				times[i] = time.Since(start)
				if err != nil {
					verdict = "refused: " + err.Error()
				}
			}
			slices.Sort(times)
			out = append(out, admissionResult{name: name, p50: times[runs/2], max: times[runs-1], runs: runs, verdict: verdict})
			logf("admission %s: p50 %s (%s)", name, times[runs/2], verdict)
		}
	}
	return out
}

func humanSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
