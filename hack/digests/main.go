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

// Command digests writes cabpi's catalogue of the SHA-256 of the official Kubernetes release
// binaries (internal/nodelayout/catalogue.sha256sums, docs/adr/046). It is a release step, run
// on a machine that can read the sources:
//
//	go run ./hack/digests -kubespray ../kubespray [-min v1.30.0] [-verify https://dl.k8s.io/release] > internal/nodelayout/catalogue.sha256sums
//
// The digests are read from kubespray's checksum table
// (roles/kubespray_defaults/vars/main/checksums.yml) in every commit of a kubespray clone that
// has it, newest first: each release is taken from the newest commit that lists it, and that
// commit is named as its source. Two commits that disagree on a digest stop the command. With
// -verify, each digest is also checked against the release's published <binary>.sha256 file.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

const checksumsPath = "roles/kubespray_defaults/vars/main/checksums.yml"

var (
	binaries = []string{"kubeadm", "kubectl", "kubelet"}
	arches   = []string{"amd64", "arm64"}
)

// entry is one digest: the release binary's path in the release layout and its source.
type entry struct {
	version semver.Version
	path    string
	digest  string
	source  string
}

func main() {
	repo := flag.String("kubespray", "", "a clone of kubernetes-sigs/kubespray")
	minVersion := flag.String("min", "v1.30.0", "the oldest release listed")
	verify := flag.String("verify", "", "a release layout (https://dl.k8s.io/release) whose .sha256 files each digest is checked against")
	flag.Parse()
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "digests: -kubespray is required")
		os.Exit(2)
	}
	entries, err := fromKubespray(*repo, semver.MustParse(strings.TrimPrefix(*minVersion, "v")))
	if err == nil && *verify != "" {
		err = verifyAgainst(*verify, entries)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "digests:", err)
		os.Exit(1)
	}
	os.Stdout.Write(render(entries))
}

// fromKubespray reads every commit of the checksum table, newest first.
func fromKubespray(repo string, minVersion semver.Version) ([]entry, error) {
	out, err := exec.Command("git", "-C", repo, "log", "--format=%H", "--", checksumsPath).Output()
	if err != nil {
		return nil, fmt.Errorf("listing the commits of %s: %w", checksumsPath, err)
	}
	byPath := map[string]entry{}
	for _, commit := range strings.Fields(string(out)) {
		data, err := exec.Command("git", "-C", repo, "show", commit+":"+checksumsPath).Output()
		if err != nil {
			continue // the file was elsewhere in that commit
		}
		var table map[string]map[string]map[string]string
		if err := yaml.Unmarshal(data, &table); err != nil {
			continue // an older shape of the table
		}
		source := fmt.Sprintf("https://github.com/kubernetes-sigs/kubespray/blob/%s/%s", commit, checksumsPath)
		for _, bin := range binaries {
			for _, arch := range arches {
				for v, sum := range table[bin+"_checksums"][arch] {
					ver, err := semver.Parse(v)
					if err != nil || ver.LT(minVersion) {
						continue
					}
					hex, ok := strings.CutPrefix(sum, "sha256:")
					if !ok || len(hex) != 64 {
						return nil, fmt.Errorf("%s: %s %s %s: %q is not a SHA-256", commit, bin, arch, v, sum)
					}
					p := fmt.Sprintf("v%s/bin/linux/%s/%s", v, arch, bin)
					if prev, seen := byPath[p]; seen {
						if prev.digest != hex {
							return nil, fmt.Errorf("%s: %s has %s here and %s in %s", commit, p, hex, prev.digest, prev.source)
						}
						continue
					}
					byPath[p] = entry{version: ver, path: p, digest: hex, source: source}
				}
			}
		}
	}
	entries := make([]entry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	// Only releases with every binary of both architectures: the catalogue's test asks it.
	count := map[string]int{}
	for _, e := range entries {
		count[e.version.String()]++
	}
	complete := entries[:0]
	for _, e := range entries {
		if count[e.version.String()] == len(binaries)*len(arches) {
			complete = append(complete, e)
		}
	}
	return complete, nil
}

// verifyAgainst checks each digest against the release's own .sha256 file.
func verifyAgainst(base string, entries []entry) error {
	client := &http.Client{Timeout: time.Minute}
	for _, e := range entries {
		url := strings.TrimRight(base, "/") + "/" + e.path + ".sha256"
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("reading %s: %w", url, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return errors.Join(fmt.Errorf("reading %s: %s", url, resp.Status), err)
		}
		if got := strings.Fields(string(body)); len(got) == 0 || got[0] != e.digest {
			return fmt.Errorf("%s: the release publishes %q, %s lists %s", e.path, body, e.source, e.digest)
		}
	}
	return nil
}

// render writes the catalogue: sources in a stable order, each with its entries by version.
func render(entries []entry) []byte {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].source != entries[j].source {
			return entries[i].source < entries[j].source
		}
		if !entries[i].version.EQ(entries[j].version) {
			return entries[i].version.LT(entries[j].version)
		}
		return entries[i].path < entries[j].path
	})
	var b bytes.Buffer
	b.WriteString("# cabpi's catalogue of the SHA-256 of the official Kubernetes release binaries, by their path in\n" +
		"# the release layout (https://dl.k8s.io/release/<path>). Written by hack/digests; do not edit.\n" +
		"# Each \"# source:\" line names where the entries below it were read.\n")
	source := ""
	for _, e := range entries {
		if e.source != source {
			source = e.source
			fmt.Fprintf(&b, "\n# source: %s\n", source)
		}
		fmt.Fprintf(&b, "%s  %s\n", e.digest, e.path)
	}
	return b.Bytes()
}
