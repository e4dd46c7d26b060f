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
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

type report struct {
	started, finished time.Time
	render            []renderResult
	admission         []admissionResult
	writeRate         float64
	apiServer         string
	initBytes         []int // cabpi, CABPK; 0 where not measured
	initErrors        []string
	throughput        []throughputResult
	lifecycle         []lifecycleResult
	memory            *memoryResult
}

// AWS EC2's raw user-data limit, the smallest of the common platforms.
const awsLimit = 16 << 10

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Benchmark results")
	p("")
	p("Measured by `make bench` (`hack/bench`) on %s, in %s.", r.started.UTC().Format("2006-01-02"), r.finished.Sub(r.started).Round(time.Second))
	p("")
	p("## Machine")
	p("")
	p("| | |")
	p("|---|---|")
	p("| CPU | %s, %d cores visible to Go |", cpuModel(), runtime.NumCPU())
	p("| memory | %s |", memTotal())
	p("| kernel | %s |", strings.TrimSpace(command("uname", "-sr")))
	p("| Go | %s |", runtime.Version())
	if r.apiServer != "" {
		p("| API server | envtest kube-apiserver %s and etcd on the same machine |", strings.TrimSpace(command(r.apiServer, "--version")))
	}
	p("")

	if len(r.throughput) > 0 {
		p("## Throughput: N worker Machines created at once")
		p("")
		p("One envtest API server; Cluster API's Machine controller in-process (its defaults: 10 workers,")
		p("ReconcilerRateLimiting on). Each provider runs in its own manager with its own defaults")
		p("(both: --kube-api-qps 100/200, --clustercache-client-qps 20/30, 100 concurrent reconciles:")
		p("cabpi --concurrency, CABPK --kubeadmconfig-concurrency). Time from the first create until every Machine has")
		p("`status.initialization.bootstrapDataSecretCreated`. The workload cluster is the same API server.")
		p("")
		if len(contenders) == 1 {
			p("| N | cabpi |")
			p("|---|---|")
			for _, ours := range r.throughput {
				p("| %d | %.1f s (%.0f/s) |", ours.n, ours.elapsed.Seconds(), float64(ours.n)/ours.elapsed.Seconds())
			}
			p("")
			p("CABPK not run (`-cabpk=false`).")
			p("")
		}
		if len(contenders) == 2 {
			p("| N | cabpi | CABPK `format: ignition` | ratio | target ≤ 0.5 |")
			p("|---|---|---|---|---|")
		}
		for i := 0; len(contenders) == 2 && i+1 < len(r.throughput); i += 2 {
			ours, theirs := r.throughput[i], r.throughput[i+1]
			ratio := ours.elapsed.Seconds() / theirs.elapsed.Seconds()
			target := "—"
			if ours.n >= 500 {
				target = verdict(ratio <= 0.5)
			}
			p("| %d | %.1f s (%.0f/s) | %.1f s (%.0f/s) | %.2f | %s |", ours.n,
				ours.elapsed.Seconds(), float64(ours.n)/ours.elapsed.Seconds(),
				theirs.elapsed.Seconds(), float64(theirs.n)/theirs.elapsed.Seconds(), ratio, target)
		}
		p("")
		p("Raw write rate of this API server (2,000 ConfigMap creates, 32 unthrottled writers): %.0f creates/s.", r.writeRate)
		p("")
		p("Each N has a namespace of its own, and each manager watches only its run's namespace: the earlier")
		p("runs' Machines, whose nodes never join, are not part of the N a user has. The workload-cluster")
		p("floor is (N − burst) / QPS = (N − 30) / 20 s: one request per config at --clustercache-client-qps 20.")
		p("Requests per config, from the first create until every Machine had its data (management / workload):")
		p("")
		p("| N | cabpi | floor | cabpi / floor | cabpi requests | CABPK requests |")
		p("|---|---|---|---|---|---|")
		for i, ours := range r.throughput {
			if ours.contender != "cabpi" {
				continue
			}
			floor := max(float64(ours.n-30), 0) / 20
			theirs := "not run"
			if i+1 < len(r.throughput) && r.throughput[i+1].contender == "CABPK" {
				theirs = requestTotals(r.throughput[i+1].requests, ours.n)
			}
			ratio := "— (N within the burst)"
			if floor > 0 {
				ratio = fmt.Sprintf("%.2f", ours.elapsed.Seconds()/floor)
			}
			p("| %d | %.1f s | %.1f s | %s | %s | %s |", ours.n, ours.elapsed.Seconds(), floor, ratio,
				requestTotals(ours.requests, ours.n), theirs)
		}
		p("")
	}

	if len(r.lifecycle) > 0 {
		r.lifecycleMarkdown(p)
	}

	if len(r.initBytes) == 2 || len(r.throughput) > 0 {
		p("## Size of the bootstrap data (bytes of the data Secret's `value`)")
		p("")
		p("| config | cabpi | CABPK (Ignition 2.3) | ratio | target |")
		p("|---|---|---|---|---|")
		if len(contenders) == 1 && len(r.throughput) > 0 {
			p("| default worker | %d | not run | | |", r.throughput[0].workerBytes)
		}
		if len(contenders) == 2 && len(r.throughput) >= 2 {
			ours, theirs := r.throughput[0].workerBytes, r.throughput[1].workerBytes
			p("| default worker | %d | %d | %.2f | ≤ 1.0: %s |", ours, theirs, float64(ours)/float64(theirs), verdict(ours <= theirs))
		}
		for _, e := range r.initErrors {
			p("Control-plane init not measured for %s", e)
			p("")
		}
		if len(r.initBytes) == 2 && r.initBytes[0] > 0 && r.initBytes[1] > 0 {
			ours, theirs := r.initBytes[0], r.initBytes[1]
			p("| control-plane init, 4 key pairs | %d | %d | %.2f | ≤ 0.8 and < 16 KiB: %s |", ours, theirs,
				float64(ours)/float64(theirs), verdict(float64(ours) <= 0.8*float64(theirs) && ours < awsLimit))
		}
		p("")
	}

	if len(r.render) > 0 {
		p("## Render (`ignition.Render`, input from `configinput.Offline`)")
		p("")
		p("| input | ns/op | p50 | p99 | B/op | allocs/op | output bytes |")
		p("|---|---|---|---|---|---|---|")
		for _, x := range r.render {
			p("| %s | %d | %s | %s | %d | %d | %d |", x.name, x.nsPerOp.Nanoseconds(), x.p50.Round(time.Microsecond),
				x.p99.Round(time.Microsecond), x.bytesPerOp, x.allocsOp, x.outBytes)
		}
		p("")
		for _, x := range r.render {
			if x.name == "worker/flatcar" {
				p("Target: worker render p50 < 2 ms: %s (%s).", verdict(x.p50 < 2*time.Millisecond), x.p50.Round(time.Microsecond))
			}
		}
		p("")
	}

	if len(r.admission) > 0 {
		p("## Admission (IgnitionConfig webhook: defaulting and validation, in-process)")
		p("")
		p("| config | p50 | max | runs | result | target |")
		p("|---|---|---|---|---|---|")
		for _, a := range r.admission {
			limit := 50 * time.Millisecond
			if strings.Contains(a.name, "MiB") {
				limit = 2 * time.Second
			}
			res := a.verdict
			if len(res) > 120 {
				res = res[:120] + "…"
			}
			p("| %s | %s | %s | %d | %s | p50 < %s: %s |", a.name, a.p50.Round(time.Microsecond), a.max.Round(time.Microsecond),
				a.runs, strings.ReplaceAll(res, "|", "\\|"), limit, verdict(a.p50 < limit))
		}
		p("")
	}

	if r.memory != nil {
		m := r.memory
		ratio := float64(m.rssLoaded) / float64(m.rssBase)
		p("## Memory (the manager binary, `--namespace` of the %d-config throughput run)", m.configs)
		p("")
		p("| management cluster | manager RSS |")
		p("|---|---|")
		p("| %d delivered configs | %.1f MiB |", m.configs, float64(m.rssBase)/(1<<20))
		p("| the same + %d unrelated Secrets + %d ConfigMaps (1 KiB each) | %.1f MiB |", m.unrelated, m.unrelated, float64(m.rssLoaded)/(1<<20))
		p("")
		p("Ratio %.2f; target ≤ 1.2: %s.", ratio, verdict(ratio <= 1.2))
		p("")
	}
	return b.String()
}

// requestTotals is "management / workload" requests per config.
func requestTotals(s requestsSnapshot, configs int) string {
	return fmt.Sprintf("%.2f / %.2f", float64(total(s.management))/float64(configs), float64(total(s.workload))/float64(configs))
}

// lifecycleMarkdown is the requests one worker Machine costs each contender, by cluster, verb
// and resource.
func (r *report) lifecycleMarkdown(p func(string, ...any)) {
	machines := r.lifecycle[0].machines
	p("## Requests per worker Machine")
	p("")
	p("%d worker Machines of a joinable Cluster, each contender in a manager of its own on a namespace of its", machines)
	p("own (defaults as above), followed from their configs' creation through their data Secrets and their")
	p("nodes joining (infrastructure machine provisioned, a Ready Node, the Machine's nodeRef) until the")
	p("manager had sent nothing for %s. Requests as the API servers see them, after the clients' rate", quietFor)
	p("limiters: the management cluster's counted on the manager's client, the workload cluster's by a proxy")
	p("the Cluster's kubeconfig points at (its own user agent tells the contender's ClusterCache apart). The")
	p("managers' start and watches (their caches' LISTs and WATCHes) and the ClusterCache's connection to the")
	p("workload cluster (discovery, then `GET /` every 10 s: costs per Cluster) are left out. Per Machine:")
	p("")
	header, rule := "| cluster | request |", "|---|---|"
	for _, l := range r.lifecycle {
		header += " " + l.contender + " |"
		rule += "---|"
	}
	p("%s", header)
	p("%s", rule)
	for _, cluster := range []string{"management", "workload"} {
		of := func(l lifecycleResult) map[string]int {
			if cluster == "management" {
				return l.requests.management
			}
			return l.requests.workload
		}
		union := map[string]int{}
		for _, l := range r.lifecycle {
			for k, v := range of(l) {
				union[k] += v
			}
		}
		for _, k := range sortedKeys(union) {
			row := fmt.Sprintf("| %s | `%s` |", cluster, k)
			for _, l := range r.lifecycle {
				row += " " + perMachine(of(l)[k], l.machines) + " |"
			}
			p("%s", row)
		}
		row := fmt.Sprintf("| %s | **total** |", cluster)
		for _, l := range r.lifecycle {
			row += fmt.Sprintf(" **%s** |", perMachine(total(of(l)), l.machines))
		}
		p("%s", row)
	}
	p("")
}

// perMachine is count / machines, "—" for none.
func perMachine(count, machines int) string {
	if count == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(count)/float64(machines))
}

func command(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return string(out)
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
