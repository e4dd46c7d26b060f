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

// Package releaseserver serves Kubernetes to the real-node suite's nodes the way the Internet
// would, from an address on the suite's own bridge: the release binaries in the Kubernetes release
// layout with the SHA-256 files it publishes (as dl.k8s.io), and the Kubernetes system extension
// images in the Flatcar sysext bakery's layout with its SHA256SUMS. A second copy of each layout is
// a mirror that lies: it serves changed files (one byte more) with published digests that match
// the change (the release layout's kubelet and its .sha256; the sysext images and SHA256SUMS).
// Only digests that do not come from the mirror (Digests, which the suite hands cabpi the way a
// user would: spec.kubernetes.digestsFrom) catch it.
package releaseserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Release is what the server has of one Kubernetes version.
type Release struct {
	// Version is the release ("v1.34.4").
	Version string
	// BinDir holds its kubeadm and kubelet.
	BinDir string
	// Sysext is its Kubernetes system extension image (nodeimage.Builder.Sysext); empty for none.
	Sysext string
	// LaterPatches are versions of later patch releases of the same minor that the sysext layout
	// publishes too, each with this release's image under its name: what systemd-sysupdate,
	// following the minor's transfer file, would take next (a bakery publishes new patch
	// releases of every minor it serves). Nothing else asks for them by name.
	LaterPatches []string
}

// Binaries served from each release's BinDir: every release has binaries, and the optional
// ones where BinDir has them (kube-proxy, which the management cluster's node runs).
var (
	binaries         = []string{"kubeadm", "kubelet"}
	optionalBinaries = []string{"kube-proxy"}
)

// TamperedBinary is the binary the tampered copy of the release layout serves altered.
const TamperedBinary = "kubelet"

// Paths of the layouts on the server.
const (
	releasePath        = "/release"
	tamperedPath       = "/tampered/release"
	sysextPath         = "/extensions"
	tamperedSysextPath = "/tampered/extensions"
	sysextSumsPath     = "kubernetes/SHA256SUMS"
)

// Server is a running release server.
type Server struct {
	base string
	// digests are the genuine files' SHA-256 as sha256sum prints them in each layout's root.
	digests []byte
	server  *http.Server
	done    chan error

	mu       sync.Mutex
	requests map[string]int
}

// served is one path of the server.
type served struct {
	file string
	// data, when set, is served instead of file (the SHA-256 files).
	data []byte
	// tampered appends a byte to file.
	tampered bool
}

// Start serves releases on addr (a free port), until Close.
func Start(addr netip.Addr, releases []Release) (*Server, error) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return nil, fmt.Errorf("listening for the release server: %w", err)
	}
	s := &Server{base: "http://" + ln.Addr().String(), done: make(chan error, 1), requests: map[string]int{}}
	paths, err := s.layouts(releases)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.server = &http.Server{Handler: s.handler(paths), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.server.Serve(ln) }()
	return s, nil
}

// layouts are the paths the server serves: the release layout and the sysext layout, each with
// its tampered copy.
func (s *Server) layouts(releases []Release) (map[string]served, error) {
	paths := map[string]served{}
	minors := map[string]bool{}
	// The bakery's digests of its Kubernetes images, one line per image as sha256sum writes them,
	// where systemd-sysupdate reads them; the tampered copy's list the tampered images.
	var sums, tamperedSums []byte
	for _, r := range releases {
		names := binaries
		for _, name := range optionalBinaries {
			if _, err := os.Stat(filepath.Join(r.BinDir, name)); err == nil {
				names = append(slices.Clone(names), name)
			}
		}
		for _, name := range names {
			file := filepath.Join(r.BinDir, name)
			sum, err := fileSHA256(file)
			if err != nil {
				return nil, err
			}
			rel := path.Join(r.Version, "bin", "linux", "amd64", name)
			s.digests = fmt.Appendf(s.digests, "%s  %s\n", sum, rel)
			tamperedSum, err := tamperedSHA256(file)
			if err != nil {
				return nil, err
			}
			for _, layout := range []string{releasePath, tamperedPath} {
				p := path.Join(layout, rel)
				tampered := layout == tamperedPath && name == TamperedBinary
				paths[p] = served{file: file, tampered: tampered}
				// As dl.k8s.io publishes it: the hex digest alone (the tampered file's, for it).
				paths[p+".sha256"] = served{data: []byte(sum)}
				if tampered {
					paths[p+".sha256"] = served{data: []byte(tamperedSum)}
				}
			}
		}
		if r.Sysext == "" {
			continue
		}
		sum, err := fileSHA256(r.Sysext)
		if err != nil {
			return nil, err
		}
		tamperedSum, err := tamperedSHA256(r.Sysext)
		if err != nil {
			return nil, err
		}
		minor, err := minorOf(r.Version)
		if err != nil {
			return nil, err
		}
		minors[minor] = true
		for _, version := range append([]string{r.Version}, r.LaterPatches...) {
			if later, err := minorOf(version); err != nil || later != minor {
				return nil, fmt.Errorf("later patch %q of %s: not of its minor (%v)", version, r.Version, err)
			}
			image := fmt.Sprintf("kubernetes-%s-x86-64.raw", version)
			sums = fmt.Appendf(sums, "%s  %s\n", sum, image)
			tamperedSums = fmt.Appendf(tamperedSums, "%s  %s\n", tamperedSum, image)
			s.digests = fmt.Appendf(s.digests, "%s  %s\n", sum, image)
			// Where cabpi fetches an image, and beside SHA256SUMS, where a transfer file's
			// url-file source has systemd-sysupdate fetch it. The tampered copy: every image
			// one byte longer than its published digest says.
			for _, dir := range []string{"", path.Dir(sysextSumsPath)} {
				paths[path.Join(sysextPath, dir, image)] = served{file: r.Sysext}
				paths[path.Join(tamperedSysextPath, dir, image)] = served{file: r.Sysext, tampered: true}
			}
		}
	}
	if sums == nil {
		return paths, nil
	}
	for _, layout := range []string{sysextPath, tamperedSysextPath} {
		paths[path.Join(layout, sysextSumsPath)] = served{data: sums}
		if layout == tamperedSysextPath {
			paths[path.Join(layout, sysextSumsPath)] = served{data: tamperedSums}
		}
		paths[path.Join(layout, "noop.conf")] = served{data: []byte(noopTransfer)}
		if layout == sysextPath {
			s.digests = fmt.Appendf(s.digests, "%s  noop.conf\n", dataSHA256([]byte(noopTransfer)))
		}
		for _, minor := range slices.Sorted(maps.Keys(minors)) {
			source := s.base + path.Join(layout, path.Dir(sysextSumsPath)) + "/"
			rel := path.Join(path.Dir(sysextSumsPath), "kubernetes-"+minor+".conf")
			transfer := transferFile(source, minor)
			paths[path.Join(layout, rel)] = served{data: transfer}
			if layout == sysextPath {
				s.digests = fmt.Appendf(s.digests, "%s  %s\n", dataSHA256(transfer), rel)
			}
		}
	}
	return paths, nil
}

// minorOf is "vMAJOR.MINOR" of a release "vMAJOR.MINOR.PATCH".
func minorOf(version string) (string, error) {
	parts := strings.Split(version, ".")
	if len(parts) != 3 || !strings.HasPrefix(version, "v") {
		return "", fmt.Errorf("release %q is not vMAJOR.MINOR.PATCH", version)
	}
	return parts[0] + "." + parts[1], nil
}

// transferFile is systemd-sysupdate's transfer file for the Kubernetes images of one minor, as a
// bakery publishes it beside its digests: the newest patch release of the minor from source
// (url-file: SHA256SUMS and the images, beside each other), kept in the directory where cabpi
// puts the image, with the sysext link at the current one. Verify=false: the bakery publishes no
// signature of its SHA256SUMS, and Flatcar's documented transfer files say so too.
func transferFile(source, minor string) []byte {
	pattern := "kubernetes-" + minor + ".@v-%a.raw"
	return fmt.Appendf(nil, `[Transfer]
Verify=false

[Source]
Type=url-file
Path=%s
MatchPattern=%s

[Target]
InstancesMax=3
Type=regular-file
Path=/opt/extensions/kubernetes
CurrentSymlink=/etc/extensions/kubernetes.raw
MatchPattern=%s
`, source, pattern, pattern)
}

// noopTransfer is the bakery's noop.conf in kind: a transfer that matches nothing, so that
// systemd-sysupdate's run of the default component (the OS) finds a configuration and nothing
// to do.
const noopTransfer = `[Source]
Type=regular-file
Path=/
MatchPattern=invalid@v.raw

[Target]
Type=regular-file
Path=/
MatchPattern=invalid@v.raw
`

func (s *Server) handler(paths map[string]served) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := paths[r.URL.Path]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.requests[r.URL.Path]++
		s.mu.Unlock()
		if p.data != nil {
			w.Header().Set("Content-Length", strconv.Itoa(len(p.data)))
			_, _ = w.Write(p.data)
			return
		}
		f, err := os.Open(p.file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		size := info.Size()
		if p.tampered {
			size++
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		if r.Method == http.MethodHead {
			return
		}
		if _, err := io.Copy(w, f); err != nil {
			return
		}
		if p.tampered {
			_, _ = w.Write([]byte{0})
		}
	})
}

// BinariesURL is the base URL of the release layout (spec.kubernetes.binaries.baseURL).
func (s *Server) BinariesURL() string { return s.base + releasePath }

// TamperedBinariesURL is the base URL of the release layout whose TamperedBinary does not match
// its SHA-256 file.
func (s *Server) TamperedBinariesURL() string { return s.base + tamperedPath }

// SysextURL is the base URL of the system extension images (spec.kubernetes.sysext.baseURL).
func (s *Server) SysextURL() string { return s.base + sysextPath }

// TamperedSysextURL is the base URL of a sysext layout whose images do not match the digests
// its SHA256SUMS publishes.
func (s *Server) TamperedSysextURL() string { return s.base + tamperedSysextPath }

// Digests is the digest list of the genuine layouts' files, as sha256sum prints it in each
// layout's root (the release binaries, the system extension images, and sysupdate's transfer
// files and noop.conf): what a user of a private mirror lists in spec.kubernetes.digestsFrom.
// The tampered copies' files do not match it.
func (s *Server) Digests() string { return string(s.digests) }

// Requests is how often path (below the server's root) was fetched.
func (s *Server) Requests(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[p]
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.server.Shutdown(ctx)
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

func fileSHA256(file string) (string, error) { return hashFile(file, nil) }

// hashFile is the SHA-256 of file's content followed by extra.
func hashFile(file string, extra []byte) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", file, err)
	}
	h.Write(extra)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tamperedSHA256 is the SHA-256 of file as the tampered layouts serve it: one zero byte more.
func tamperedSHA256(file string) (string, error) { return hashFile(file, []byte{0}) }

func dataSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
