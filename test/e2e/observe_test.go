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

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/benchresults"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// nodeWatch remembers each Node of the workload cluster as it was when it was registered: the
// taints a kubelet registers with are gone once Cluster API removed them, and only a watch from
// before the registration sees them.
type nodeWatch struct {
	mu    sync.Mutex
	first map[string]*corev1.Node
}

func watchNodes(ctx context.Context, c kubernetes.Interface) *nodeWatch {
	w := &nodeWatch{first: map[string]*corev1.Node{}}
	factory := informers.NewSharedInformerFactory(c, 0)
	informer := factory.Core().V1().Nodes().Informer()
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			w.mu.Lock()
			if _, seen := w.first[n.Name]; !seen {
				w.first[n.Name] = n.DeepCopy()
			}
			w.mu.Unlock()
		}
	}})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

// registered is the Node as it was registered, nil when it never was.
func (w *nodeWatch) registered(name string) *corev1.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[name]
}

// nodeTiming is one node's way from Machine to Node, in seconds since the Machine was created.
type nodeTiming struct {
	flavor, machine                        string
	dataSecret, boot, kubeadmExit, nodeRef float64
}

// clusterTiming is one cluster's way from creation to all its Machines Running.
type clusterTiming struct {
	flavor, cluster string
	machines        int
	seconds         float64
}

// timingTable collects the nodes' and clusters' timings: a figure, never an assertion.
type timingTable struct {
	mu       sync.Mutex
	rows     []nodeTiming
	clusters []clusterTiming
}

func (t *timingTable) addCluster(row clusterTiming) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clusters = append(t.clusters, row)
}

func (t *timingTable) add(row nodeTiming) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, row)
}

// markdown is the table bench/results.md shows.
func (t *timingTable) markdown() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	b.WriteString("| flavor | Machine | data Secret (s) | node boot (s) | `kubeadm join` exit (s) | nodeRef (s) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|\n")
	rows := slices.Clone(t.rows)
	slices.SortStableFunc(rows, func(a, b nodeTiming) int { return strings.Compare(a.flavor, b.flavor) })
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f | %.1f |\n", r.flavor, r.machine, r.dataSecret, r.boot, r.kubeadmExit, r.nodeRef)
	}
	if len(t.clusters) > 0 {
		b.WriteString("\n| flavor | Cluster made by cabpi alone | Machines | Cluster created → all Machines Running (s) |\n|---|---|---:|---:|\n")
		for _, c := range t.clusters {
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f |\n", c.flavor, c.cluster, c.machines, c.seconds)
		}
	}
	return b.String()
}

// write puts the table into the artifacts and, with CABPI_E2E_RESULTS=<file> (make
// bench-e2e), into that file's real-node section.
func (t *timingTable) write(artifacts string) error {
	if len(t.rows) == 0 {
		return nil
	}
	table := t.markdown()
	fmt.Printf("Seconds from Machine creation, per node:\n%s", table)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(artifacts, "timings.md"), []byte(table), 0o644); err != nil {
		return err
	}
	results := os.Getenv("CABPI_E2E_RESULTS")
	if results == "" {
		return nil
	}
	if !filepath.IsAbs(results) {
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		results = filepath.Join(root, results)
	}
	data, err := os.ReadFile(results)
	if err != nil {
		return err
	}
	body := benchresults.Heading(time.Now().UTC().Format("2006-01-02"), fmt.Sprintf("%d cores", runtime.NumCPU()), kubernetesVersion) + "\n" + table
	return os.WriteFile(results, []byte(benchresults.Replace(string(data), body)), 0o644)
}
