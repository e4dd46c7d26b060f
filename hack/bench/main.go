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

// Command bench measures cabpi side by side with Cluster API's kubeadm bootstrap provider
// (CABPK, format: ignition) on one envtest API server with Cluster API's Machine controller
// in-process, and writes the numbers as Markdown (bench/results.md). Run it with `make bench`.
//
// It reports against the targets of issue 12 and never fails on timing: a missed target is
// printed as such, to be profiled (--profiler-address on the manager) and explained.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"sigs.k8s.io/cluster-api/feature"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/benchresults"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func main() {
	sizes := flag.String("n", "100,500,1000", "numbers of worker Machines created at once, comma-separated")
	sections := flag.String("sections", "render,admission,throughput,memory", "what to measure, comma-separated (throughput includes the requests per worker Machine)")
	unrelated := flag.Int("unrelated", 10000, "unrelated Secrets and ConfigMaps (each) for the memory measurement")
	outFile := flag.String("out", "", "write the Markdown report here too (e.g. bench/results.md)")
	withCABPK := flag.Bool("cabpk", true, "also run Cluster API's kubeadm bootstrap provider")
	flag.BoolVar(&verbose, "v", false, "log the managers' output and each throughput run's request counts by verb and resource to stderr")
	flag.Parse()
	if verbose {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	}
	if !*withCABPK {
		contenders = []contender{cabpi}
	}
	if err := run(*sizes, *sections, *unrelated, *outFile); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// verbose is -v.
var verbose bool

// contenders are the providers measured, cabpi first.
var contenders = []contender{cabpi, cabpk}

func run(sizeList, sectionList string, unrelated int, outFile string) error {
	var ns []int
	for _, s := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-n: %w", err)
		}
		ns = append(ns, n)
	}
	want := map[string]bool{}
	for _, s := range strings.Split(sectionList, ",") {
		want[strings.TrimSpace(s)] = true
	}
	rep := &report{started: time.Now()}
	ctx := context.Background()

	if want["render"] {
		r, err := benchRender()
		if err != nil {
			return err
		}
		rep.render = r
	}
	if want["admission"] {
		rep.admission = benchAdmission(ctx)
	}
	if want["throughput"] || want["memory"] {
		// CABPK renders Ignition only behind this gate.
		if err := feature.MutableGates.Set("KubeadmBootstrapFormatIgnition=true"); err != nil {
			return err
		}
		env, err := testenv.Start(ctx, testenv.Options{
			MachineController: true,
			KubeadmCRDs:       true,
			// Cluster API's defaults: --machine-concurrency 10, ReconcilerRateLimiting on.
			MaxConcurrentReconciles:    10,
			KeepReconcilerRateLimiting: true,
		})
		if err != nil {
			return err
		}
		defer func() { _ = env.Stop() }()
		if err := env.StartManager(ctx); err != nil {
			return err
		}
		if workload, err = startWorkloadProxy(env.Config); err != nil {
			return err
		}
		defer workload.stop()
		fastConfig := rest.CopyConfig(env.Config)
		fastConfig.QPS = -1 // the bench's own writes are not throttled
		fast, err := client.New(fastConfig, client.Options{Scheme: env.Scheme})
		if err != nil {
			return err
		}
		if rep.writeRate, err = writeRate(ctx, env, fast); err != nil {
			return err
		}
		logf("API server write rate: %.0f creates/s", rep.writeRate)
		rep.apiServer = env.TestEnv.ControlPlane.APIServer.Path

		for _, c := range contenders {
			b, err := initBytes(ctx, env, fast, c)
			if err != nil {
				// Reported, not fatal: the throughput run is worth having without it.
				logf("init size of %s not measured: %v", c.name, err)
				rep.initErrors = append(rep.initErrors, fmt.Sprintf("%s: %v", c.name, err))
			}
			rep.initBytes = append(rep.initBytes, b)
		}
		if want["throughput"] {
			for _, c := range contenders {
				l, err := runLifecycle(ctx, env, fast, c)
				if err != nil {
					return err
				}
				rep.lifecycle = append(rep.lifecycle, l)
			}
			for _, n := range ns {
				for _, c := range contenders {
					r, err := runThroughput(ctx, env, fast, c, n)
					if err != nil {
						return err
					}
					rep.throughput = append(rep.throughput, r)
				}
			}
		}
		if want["memory"] {
			n := ns[len(ns)-1]
			target := fmt.Sprintf("bench-cabpi-%d", n)
			if !want["throughput"] {
				if _, err := runThroughput(ctx, env, fast, cabpi, n); err != nil {
					return err
				}
			}
			m, err := benchMemory(ctx, env, fast, target, n, unrelated)
			if err != nil {
				return err
			}
			rep.memory = &m
		}
	}
	rep.finished = time.Now()
	md := rep.markdown()
	fmt.Print(md)
	if outFile != "" {
		// The real-node section (make bench-e2e) is not this tool's: it is kept.
		if old, err := os.ReadFile(outFile); err == nil {
			md = benchresults.Keep(string(old), md)
		}
		return os.WriteFile(outFile, []byte(md), 0o644)
	}
	return nil
}
