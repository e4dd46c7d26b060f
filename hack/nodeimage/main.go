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

// Command nodeimage builds (or finds in the cache) the root file system of a real-node test
// image and prints its path: `go run ./hack/nodeimage -flavor flatcar -kube-bin DIR -kubernetes-version v1.34.4`.
// The real-node suite builds its images the same way; this is for building them ahead of it
// and for looking at one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
)

func main() {
	flavor := flag.String("flavor", string(infrav1.FlavorFlatcar), "flatcar or fcos")
	version := flag.String("kubernetes-version", "v1.34.4", "version of kubeadm and kubelet")
	bin := flag.String("kube-bin", "", "directory with kubeadm and kubelet at that version (hack/kube-binaries.sh)")
	cache := flag.String("cache", filepath.Join(os.Getenv("CABPI_CACHE"), "nodeimage"), "where images are cached")
	etcd := flag.String("etcd", "", "with -pause: etcd at the version kubeadm's image list names (hack/etcd-binary.sh), for a control-plane image")
	pause := flag.String("pause", "", "with -etcd: the pause binary (go build ./hack/pause)")
	flag.Parse()
	b := nodeimage.NewBuilder(*cache)
	b.Log = os.Stderr
	k := nodeimage.Kubernetes{Version: *version, BinDir: *bin}
	if *etcd != "" || *pause != "" {
		k.ControlPlane = &nodeimage.ControlPlane{KubeBinDir: *bin, EtcdBin: *etcd, PauseBin: *pause}
	}
	root, err := b.Build(context.Background(), infrav1.Flavor(*flavor), k)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeimage:", err)
		os.Exit(1)
	}
	fmt.Println(root)
}
