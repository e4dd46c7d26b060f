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

package nodelayout

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
)

// Digests that do not come from the mirror (docs/adr/046): every file a node downloads to run
// (a release binary, a system extension image) is pinned to a SHA-256 that cabpi knows (its
// catalogue of the official releases) or that the user gave (spec.kubernetes.digestsFrom), and
// checked against it before anything runs it: by Ignition at first boot (verification.hash), by
// the node side of the in-place update before it swaps anything in.

// Digests are SHA-256 digests (lowercase hex) of downloads by their path relative to their
// source's base URL: "v1.34.2/bin/linux/amd64/kubelet" in the release layout,
// "kubernetes-v1.34.2-x86-64.raw" in the sysext layout. It is what `sha256sum` prints when run
// in a mirror's root, and what the sysext bakery's SHA256SUMS lists.
type Digests map[string]string

// DigestsSyntaxError says which line of a digest list is not "<sha256 hex>  <path>".
type DigestsSyntaxError struct {
	Line int
	Why  string
}

func (e *DigestsSyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Why) }

// maxDigestPath bounds a listed path: no download of a layout is longer.
const maxDigestPath = 512

// ParseDigests reads a digest list in `sha256sum`'s format: "<hex>  <path>" per line, or
// "<hex> *<path>" (binary mode); a leading "./" of the path is dropped (sha256sum ./v1.34.2/...),
// blank lines and lines starting with # are skipped. The same path twice with different digests
// is an error: which one was meant cannot be told.
func ParseDigests(data []byte) (Digests, error) {
	out := Digests{}
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 4096), 64*1024)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		if !ok || !sha256Hex.MatchString(strings.ToLower(sum)) {
			return nil, &DigestsSyntaxError{Line: n, Why: "not \"<SHA-256 in hex>  <path>\", as sha256sum prints it"}
		}
		name = strings.TrimPrefix(strings.TrimLeft(name, " "), "*")
		name = strings.TrimPrefix(name, "./")
		if name == "" || len(name) > maxDigestPath || strings.ContainsAny(name, " \t") || path.Clean(name) != name ||
			strings.HasPrefix(name, "/") || strings.HasPrefix(name, "../") {
			return nil, &DigestsSyntaxError{Line: n, Why: "the path is not a clean relative path of the mirror (as sha256sum prints it when run in the mirror's root)"}
		}
		sum = strings.ToLower(sum)
		if prev, seen := out[name]; seen && prev != sum {
			return nil, &DigestsSyntaxError{Line: n, Why: fmt.Sprintf("%s is listed twice with different digests", name)}
		}
		out[name] = sum
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading the digest list: %w", err)
	}
	return out, nil
}

// catalogueData is cabpi's catalogue: the SHA-256 of the official Kubernetes release binaries,
// by their path in the release layout, each block under a "# source:" line naming where its
// entries were read. hack/digests writes it (docs/guide/air-gapped.md, the release step).
//
//go:embed catalogue.sha256sums
var catalogueData []byte

// CatalogueEntry is one digest of the catalogue and where it was read.
type CatalogueEntry struct {
	Path, Digest, Source string
}

// catalogueSourcePrefix starts the line that names the source of the entries below it.
const catalogueSourcePrefix = "# source: "

// ParseCatalogue reads a catalogue: ParseDigests' format, each entry below a "# source: <where>"
// line. An entry with no source above it is an error: the digests are facts of the public
// record, and one that names none cannot be checked.
func ParseCatalogue(data []byte) ([]CatalogueEntry, error) {
	var out []CatalogueEntry
	source := ""
	s := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if src, ok := strings.CutPrefix(line, catalogueSourcePrefix); ok {
			source = strings.TrimSpace(src)
			continue
		}
		d, err := ParseDigests([]byte(line))
		var syntax *DigestsSyntaxError
		if errors.As(err, &syntax) {
			return nil, &DigestsSyntaxError{Line: n, Why: syntax.Why}
		}
		if err != nil {
			return nil, err
		}
		for p, sum := range d {
			if source == "" {
				return nil, &DigestsSyntaxError{Line: n, Why: "an entry with no \"# source:\" line above it"}
			}
			out = append(out, CatalogueEntry{Path: p, Digest: sum, Source: source})
		}
	}
	return out, nil
}

var catalogue = sync.OnceValue(func() Digests {
	entries, err := ParseCatalogue(catalogueData)
	if err != nil {
		// The catalogue is cabpi's own data, checked by its tests (TestCatalogue).
		panic(fmt.Sprintf("cabpi's digest catalogue: %v", err))
	}
	out := Digests{}
	for _, e := range entries {
		out[e.Path] = e.Digest
	}
	return out
})

// CatalogueDigest is the catalogue's digest of the release layout's path rel.
func CatalogueDigest(rel string) (string, bool) {
	sum, ok := catalogue()[rel]
	return sum, ok
}

// CatalogueVersions are the releases the catalogue has digests of, as the release layout names
// them, oldest first.
func CatalogueVersions() []string {
	seen := map[string]bool{}
	for p := range catalogue() {
		if v, _, ok := strings.Cut(p, "/"); ok {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return versionLess(out[i], out[j]) })
	return out
}

// Download is one file a node fetches from a source: Rel is its path relative to the source's
// base URL (the key of Digests), URL where it is fetched from.
type Download struct {
	Name, Rel, URL string
	// Runs says the node runs what it holds (a binary, an image merged into /usr): it must be
	// pinned. The rest (systemd-sysupdate's transfer files) is pinned when a digest is given.
	Runs bool
}

// Downloads are the files of the release layout for b's version and architecture.
func (b Binaries) Downloads() []Download {
	out := make([]Download, 0, len(b.Names))
	for _, name := range b.Names {
		out = append(out, Download{Name: name, Rel: strings.TrimPrefix(b.URL(name), strings.TrimRight(b.BaseURL, "/")+"/"), URL: b.URL(name), Runs: true})
	}
	return out
}

// Downloads are the files of the sysext layout: the image, and with sysupdate the transfer file
// of the version's minor and noop.conf.
func (l Sysext) Downloads(sysupdate bool) []Download {
	out := []Download{{Name: l.Image, Rel: l.Image, URL: l.ImageURL, Runs: true}}
	if sysupdate {
		out = append(out,
			Download{Name: l.Transfer, Rel: "kubernetes/" + l.Transfer, URL: l.TransferURL},
			Download{Name: "noop.conf", Rel: "noop.conf", URL: l.NoopURL})
	}
	return out
}

// Pins are the digests the downloads are checked against: the user's (spec.kubernetes.digestsFrom)
// where given, else the catalogue's; missing lists the downloads that run and have neither.
func Pins(downloads []Download, user Digests) (pins Digests, missing []Download) {
	pins = Digests{}
	for _, d := range downloads {
		if sum, ok := user[d.Rel]; ok {
			pins[d.Rel] = sum
		} else if sum, ok := catalogue()[d.Rel]; ok {
			pins[d.Rel] = sum
		} else if d.Runs {
			missing = append(missing, d)
		}
	}
	return pins, missing
}

// UnknownDigestsError says that no digest is known for downloads that a node would run: the
// version is not in cabpi's catalogue (a private build, a release newer than this cabpi, any
// system extension image) and the user gave none. What to do is in its message.
type UnknownDigestsError struct {
	Version string
	Missing []Download
}

func (e *UnknownDigestsError) Error() string {
	rels := make([]string, 0, len(e.Missing))
	for _, d := range e.Missing {
		rels = append(rels, d.Rel)
	}
	return fmt.Sprintf("no SHA-256 is known for %s of %s (cabpi's catalogue has the official release binaries of %s): "+
		"list them, as sha256sum prints them in the mirror's root, in a ConfigMap or Secret key and name it in "+
		"spec.kubernetes.digestsFrom (docs/guide/air-gapped.md)", strings.Join(rels, ", "), e.Version, catalogueRange())
}

// catalogueRange names the catalogue's releases for messages: "v1.30.0 to v1.36.4".
func catalogueRange() string {
	vs := CatalogueVersions()
	if len(vs) == 0 {
		return "no release"
	}
	return vs[0] + " to " + vs[len(vs)-1]
}

// versionLess orders releases by their version (names that are not one as strings).
func versionLess(a, b string) bool {
	va, errA := semver.ParseTolerant(a)
	vb, errB := semver.ParseTolerant(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return va.LT(vb)
}
