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

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
)

func main() {
	flavor := flag.String("flavor", string(nodeimage.FlavorFlatcar), "flatcar or fcos")
	version := flag.String("kubernetes-version", "v1.34.4", "version of kubeadm and kubelet")
	bin := flag.String("kube-bin", "", "directory with kubeadm and kubelet at that version (hack/kube-binaries.sh)")
	cache := flag.String("cache", filepath.Join(os.Getenv("CABPI_CACHE"), "nodeimage"), "where images are cached")
	flag.Parse()
	b := nodeimage.NewBuilder(*cache)
	b.Log = os.Stderr
	root, err := b.Build(context.Background(), nodeimage.Flavor(*flavor), nodeimage.Kubernetes{Version: *version, BinDir: *bin})
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeimage:", err)
		os.Exit(1)
	}
	fmt.Println(root)
}
