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

// Package provider is the real-node suite's infrastructure provider: reconcilers of
// NspawnCluster and NspawnMachine that follow Cluster API's infrastructure contract (v1beta2),
// as CAPD does with docker, and Instances, the host side: one systemd-nspawn machine per
// NspawnMachine, on the suite's bridge, from a cached node image, with the Machine's bootstrap
// data applied by the real ignition-apply as the initramfs would.
//
// Instances live in the test process: a test can power one off and boot it again (a reboot),
// and Close removes whatever is left when the suite ends, failed or not.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
)

// Instances are the suite's machines.
type Instances struct {
	// Images builds (or finds in its cache) the node image of a flavor.
	Images nodeimage.Builder
	// Kubernetes is what the images carry: an instance of a Machine at another version is
	// refused (UnsupportedKubernetesVersion).
	Kubernetes nodeimage.Kubernetes
	// Network is the suite's bridge; instances get its machine addresses in order.
	Network nspawn.Network
	// Dir holds the instances' roots, each on a disk of its own.
	Dir string
	// DiskSize is the size of each instance's disk (nspawn.Spec.DiskSize): a sparse file in Dir,
	// so the host pays only for what the node writes.
	DiskSize int64
	// Artifacts receives each instance's console and, when it is removed, the journal of
	// kubeadm and the kubelet.
	Artifacts string

	mu      sync.Mutex
	byKey   map[types.NamespacedName]*Instance
	used    map[int]bool
	imageMu sync.Mutex
	images  map[infrav1.Flavor]string
	lbs     map[types.NamespacedName]*LoadBalancer
}

// LoadBalancer returns the load balancer of an NspawnCluster, started on the bridge the first
// time.
func (s *Instances) LoadBalancer(key types.NamespacedName) (*LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lb := s.lbs[key]; lb != nil {
		return lb, nil
	}
	lb, err := StartLoadBalancer(s.Network.HostAddr(), WithReadyz())
	if err != nil {
		return nil, err
	}
	if s.lbs == nil {
		s.lbs = map[types.NamespacedName]*LoadBalancer{}
	}
	s.lbs[key] = lb
	return lb, nil
}

// DeleteLoadBalancer stops the load balancer of an NspawnCluster, if it has one.
func (s *Instances) DeleteLoadBalancer(key types.NamespacedName) error {
	s.mu.Lock()
	lb := s.lbs[key]
	delete(s.lbs, key)
	s.mu.Unlock()
	if lb == nil {
		return nil
	}
	return lb.Close()
}

// Instance is one machine. Whether it was ever booted is the machine's to say (Booted): one
// record of its boots, guarded where they are made, read by every reconciler and test.
type Instance struct {
	*nspawn.Machine
	index int
}

// InstanceSpec is what an NspawnMachine asks for.
type InstanceSpec struct {
	// Name is the Machine's name: machine name and hostname, and the metadata's hostname.
	Name string
	// Flavor is the node image.
	Flavor infrav1.Flavor
	// UUID is the instance UUID its metadata reports.
	UUID string
	// Ignition is the bootstrap data.
	Ignition []byte
}

// ErrBootstrapData: ignition-apply refused the bootstrap data (terminal for the instance).
var ErrBootstrapData = errors.New("bootstrap data refused")

// Get returns the instance of an NspawnMachine, nil when it has none.
func (s *Instances) Get(key types.NamespacedName) *Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// Create makes the instance of an NspawnMachine: its root over the node image with the
// Ignition applied, and its address; it is not booted.
func (s *Instances) Create(ctx context.Context, key types.NamespacedName, spec InstanceSpec) (*Instance, error) {
	image, err := s.Image(ctx, spec.Flavor)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.byKey == nil {
		s.byKey, s.used = map[types.NamespacedName]*Instance{}, map[int]bool{}
	}
	if inst := s.byKey[key]; inst != nil {
		s.mu.Unlock()
		return inst, nil
	}
	index := 0
	for s.used[index] {
		index++
	}
	s.used[index] = true
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		delete(s.used, index)
		s.mu.Unlock()
	}

	addr, err := s.Network.MachineAddr(index)
	if err != nil {
		release()
		return nil, err
	}
	console, err := s.artifact(key, spec.Name, "console.log")
	if err != nil {
		release()
		return nil, err
	}
	m, err := nspawn.Prepare(ctx, nspawn.Spec{
		Name: spec.Name, Image: image, Dir: filepath.Join(s.Dir, key.Namespace, spec.Name),
		Network: s.Network, Address: addr,
		Instance: nspawn.Instance{Hostname: spec.Name, UUID: spec.UUID},
		Ignition: spec.Ignition, Console: console,
		CopiedDirs: []string{nodeimage.ContainerdDir},
		Init:       nodeimage.Init,
		DiskSize:   s.DiskSize,
		// A stock image gets Kubernetes from its bootstrap data, the system extension among the
		// ways: systemd-sysext needs a loop device to attach the image to.
		LoopDevices: stockLoopDevices(spec.Flavor),
	})
	if err != nil {
		_ = console.Close()
		release()
		if errors.Is(err, nspawn.ErrIgnition) {
			return nil, fmt.Errorf("%w: %w", ErrBootstrapData, err)
		}
		return nil, err
	}
	inst := &Instance{Machine: m, index: index}
	s.mu.Lock()
	s.byKey[key] = inst
	s.mu.Unlock()
	return inst, nil
}

// Delete powers the instance off, keeps its journal and removes its root; no instance is fine.
func (s *Instances) Delete(ctx context.Context, key types.NamespacedName) error {
	s.mu.Lock()
	inst := s.byKey[key]
	s.mu.Unlock()
	if inst == nil {
		return nil
	}
	errs := []error{s.saveJournal(ctx, key, inst)}
	errs = append(errs, inst.Remove(ctx))
	if c, ok := inst.Console.(*os.File); ok {
		errs = append(errs, c.Close())
	}
	s.mu.Lock()
	delete(s.byKey, key)
	delete(s.used, inst.index)
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Close removes every instance and load balancer left (the end of a suite, passed or failed).
func (s *Instances) Close(ctx context.Context) error {
	s.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	lbs := make([]types.NamespacedName, 0, len(s.lbs))
	for k := range s.lbs {
		lbs = append(lbs, k)
	}
	s.mu.Unlock()
	var errs []error
	for _, k := range keys {
		errs = append(errs, s.Delete(ctx, k))
	}
	for _, k := range lbs {
		errs = append(errs, s.DeleteLoadBalancer(k))
	}
	return errors.Join(errs...)
}

// saveJournal writes the journal of kubeadm and the kubelet (every boot) into the artifacts,
// while the instance runs; a powered-off instance's journal is read from its root.
func (s *Instances) saveJournal(ctx context.Context, key types.NamespacedName, inst *Instance) error {
	if s.Artifacts == "" || !inst.Booted() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	journal, err := inst.Journal(ctx, "kubeadm", "kubelet")
	if err != nil {
		journal, err = inst.JournalOffline(ctx, "kubeadm", "kubelet")
	}
	if err != nil {
		return fmt.Errorf("reading the journal of %s: %w", inst.Name, err)
	}
	f, err := s.artifact(key, inst.Name, "journal.log")
	if err != nil {
		return err
	}
	_, err = f.Write(journal)
	return errors.Join(err, f.Close())
}

// artifact creates <Artifacts>/<namespace>/<name>.<suffix>; without Artifacts, a file that
// discards what is written.
func (s *Instances) artifact(key types.NamespacedName, name, suffix string) (*os.File, error) {
	if s.Artifacts == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	dir := filepath.Join(s.Artifacts, key.Namespace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.Create(filepath.Join(dir, name+"."+suffix))
}

// loopDevicesPerMachine bounds the loop devices a stock machine is given: the kernel's are
// shared, and each merged extension of a running machine holds one.
const loopDevicesPerMachine = 32

func stockLoopDevices(f infrav1.Flavor) int {
	if f.Stock() {
		return loopDevicesPerMachine
	}
	return 0
}

// Image builds (or finds) the flavor's image once per Instances: concurrent instances of a new
// flavor wait for one build, and later ones do not hash the binaries again.
func (s *Instances) Image(ctx context.Context, flavor infrav1.Flavor) (string, error) {
	s.imageMu.Lock()
	defer s.imageMu.Unlock()
	if root, ok := s.images[flavor]; ok {
		return root, nil
	}
	k := s.Kubernetes
	if flavor.Stock() {
		// Nothing of Kubernetes in a stock image but the pod sandbox's image (nodeimage.Builder.Build).
		k = nodeimage.Kubernetes{Version: k.Version, BinDir: k.BinDir, ControlPlane: k.ControlPlane}
	}
	root, err := s.Images.Build(ctx, flavor, k)
	if err != nil {
		return "", fmt.Errorf("building the %s node image: %w", flavor, err)
	}
	if s.images == nil {
		s.images = map[infrav1.Flavor]string{}
	}
	s.images[flavor] = root
	return root, nil
}
