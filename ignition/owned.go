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

package ignition

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/fspath"
)

// Where systemd finds the provider's unit. Ignition writes the unit and its drop-ins under
// systemdUnitDir; a file, link or directory there, or in a directory systemd reads before it
// (system.control) or along with it (system.attached), would replace or extend the unit behind
// Ignition's unit handling. service.d holds drop-ins for every service, kubeadm.service too.
const (
	systemdUnitDir     = "/etc/systemd/system"
	systemdPresetDir   = "/etc/systemd/system-preset"
	ignitionPresetPath = systemdPresetDir + "/20-ignition.preset"
)

// ownedPaths are the paths the provider writes or relies on for every node. Certificate paths
// are owned too, but only Render knows them. 20-ignition.preset is where Ignition enables
// kubeadm.service; a file or link there would drop that line. Drop-ins of kubeadm.service under
// systemdUnitDir are not owned but checked (dropin.go); those in system.control and
// system.attached are owned, as systemd applies them over everything else.
var ownedPaths = func() []string {
	owned := []string{KubeadmConfigPath, KubeadmScriptPath, SentinelPath, ignitionPresetPath, systemdUnitDir + "/" + KubeadmUnitName,
		AttemptStateDir, KubeletHoldPath}
	for _, dir := range []string{"/etc/systemd/system.control", "/etc/systemd/system.attached"} {
		owned = append(owned, dir+"/"+KubeadmUnitName, dir+"/"+KubeadmUnitName+".d", dir+"/service.d")
	}
	return owned
}()

// ownedFile is a file the provider writes besides its fixed ones (a certificate, the discovery
// kubeconfig), with the place in the input it comes from, for errors.
type ownedFile struct {
	File
	place Place
}

// nodeKind is the kind of filesystem node a config writes.
type nodeKind string

const (
	nodeFile      nodeKind = "file"
	nodeDirectory nodeKind = "directory"
	nodeLink      nodeKind = "link"
)

// ownedConflict returns the owned path that writing a node of the kind at p would clobber, or
// "". Paths are compared cleaned, as Ignition writes "/etc/./kubeadm.yml" to /etc/kubeadm.yml.
// A node conflicts at an owned path and below it; a file or link also conflicts at a parent
// directory of an owned path, because it would put something other than a directory there.
func ownedConflict(p string, kind nodeKind, owned []string) string {
	p = path.Clean(p)
	for _, o := range owned {
		if p == o || fspath.Below(p, o) || (kind != nodeDirectory && fspath.Below(o, p)) {
			return o
		}
	}
	return ""
}

// checkSnippet rejects a snippet that writes an owned path or unit (the provider's other files
// are the extra owned paths Render knows), that writes under the read-only /usr, that disables
// kubeadm.service or a unit the bootstrap needs (needed: the Kubernetes source's, the metadata
// service) through a preset or a unit entry, that adds a drop-in to kubeadm.service breaking its
// contract, that has a verification hash that can never match, or that replaces the whole
// config, which would drop the bootstrap. Every problem found is returned.
func checkSnippet(s *snippet, providerPaths, needed []string) []*Error {
	src := s.source
	owned := append(append([]string(nil), ownedPaths...), providerPaths...)
	storage := s.config.Storage
	rep := &Report{}
	for _, n := range s.nodes() {
		if o := ownedConflict(n.path, n.kind, owned); o != "" {
			rep.add(src.errorf(ErrOwnedPathConflict,
				"writes a %s at %s, which conflicts with %s written by the provider", n.kind, n.path, o))
			continue
		}
		if problem := readOnlyPath(n.path); problem != "" {
			rep.add(src.errorf(ErrInvalidInput, "writes a %s at %s, %s", n.kind, n.path, problem))
			continue
		}
		if problem := neededUnitPath(n.path, needed); problem != "" {
			rep.add(src.errorf(ErrOwnedPathConflict, "writes a %s at %s, %s", n.kind, n.path, problem))
		}
	}
	for _, l := range storage.Links {
		rep.add(checkSnippetLink(src, l, owned))
	}
	for _, f := range storage.Files {
		rep.add(checkSnippetPreset(src, f, needed))
		rep.add(checkSnippetFileContent(src, f, kubeadmDropinPath, "the drop-in %s for "+KubeadmUnitName+",", checkDropin))
		rep.add(checkSnippetFileContent(src, f, managerConfigPath, "%s, systemd's configuration,", checkManagerConfig))
		for _, r := range append([]exptypes.Resource{f.Contents}, f.Append...) {
			rep.add(checkVerification(src, f.Path, r.Verification))
		}
	}
	for _, u := range s.config.Systemd.Units {
		rep.add(checkSnippetUnit(src, u, owned, needed))
	}
	if replace := s.config.Ignition.Config.Replace.Source; replace != nil && *replace != "" {
		rep.add(src.errorf(src.invalid,
			"sets ignition.config.replace, which would discard the bootstrap configuration"))
	}
	if len(s.config.Ignition.Config.Merge) > 0 {
		// A merged config is fetched and applied at boot, after every check here: it could
		// rewrite the provider's files or add drop-ins to kubeadm.service.
		rep.add(src.errorf(src.invalid,
			"sets ignition.config.merge, a config the provider cannot check before boot: put its contents in the snippet"))
	}
	for _, ca := range s.config.Ignition.Security.TLS.CertificateAuthorities {
		rep.add(checkVerification(src, "a certificate authority", ca.Verification))
	}
	return rep.Errors
}

// checkSnippetFileContent checks a snippet file that systemd reads (isRead says which paths: a
// drop-in of kubeadm.service, systemd's own configuration) with check, which says why its
// contents are refused or "". The contents must be readable here to be checked. what names the
// file in a message, with %s for its path.
func checkSnippetFileContent(src snippetSource, f exptypes.File, isRead func(string) bool, what string,
	check func(p string, content []byte) string) *Error {
	p := path.Clean(f.Path)
	if !isRead(p) {
		return nil
	}
	content, unreadable := snippetFileContent(f)
	if unreadable != "" {
		return src.errorf(ErrOwnedPathConflict, "writes "+what+" whose contents cannot be checked (%s)", f.Path, unreadable)
	}
	if problem := check(p, content); problem != "" {
		return src.errorf(ErrOwnedPathConflict, "writes %s", problem)
	}
	return nil
}

// snippetFileContent is what a snippet file ends up holding, contents then appends, or why it
// cannot be read here. A line may start in one part and end in the next, so they are checked
// together.
func snippetFileContent(f exptypes.File) (content []byte, unreadable string) {
	for _, r := range append([]exptypes.Resource{f.Contents}, f.Append...) {
		part, unreadable := resourceContent(r)
		if unreadable != "" {
			return nil, unreadable
		}
		content = append(content, part...)
	}
	return content, ""
}

// checkSnippetLink rejects a hard link to an owned path: it shares the owned file's inode, so
// writing or appending through the link changes, say, /etc/kubeadm.sh. Ignition resolves a
// relative target from the root. A link in the preset directory is rejected too: what it points
// to cannot be checked for a line disabling kubeadm.service.
func checkSnippetLink(src snippetSource, l exptypes.Link, owned []string) *Error {
	if p := path.Clean(l.Path); inKubeadmDropinDir(p) || slices.Contains(kubeadmDropinDirs, p) {
		return src.errorf(ErrOwnedPathConflict,
			"writes a link at %s, in or at a drop-in directory of %s: what a link points to cannot be checked", l.Path, KubeadmUnitName)
	}
	if fspath.Below(path.Clean(l.Path), systemdPresetDir) {
		return src.errorf(ErrOwnedPathConflict,
			"writes a link at %s: a preset file there could disable %s, which the provider enables, "+
				"and what a link points to cannot be checked", l.Path, KubeadmUnitName)
	}
	if l.Hard == nil || !*l.Hard || l.Target == nil {
		return nil
	}
	target := path.Join("/", *l.Target)
	// A directory's semantics: the target conflicts at an owned path and below it; a hard link
	// to a parent directory of an owned path is no hard link at all (Ignition rejects it).
	if o := ownedConflict(target, nodeDirectory, owned); o != "" {
		return src.errorf(ErrOwnedPathConflict,
			"writes a hard link at %s to %s, which conflicts with %s written by the provider", l.Path, *l.Target, o)
	}
	return nil
}

// checkSnippetPreset rejects a snippet file in the preset directory that disables
// kubeadm.service or a unit the bootstrap needs, or whose contents cannot be read here (a remote
// source, say), as they could. systemd takes the first preset line matching a unit, from files
// in name order; a file sorting before Ignition's 20-ignition.preset would win over its enable
// line. Any file is refused, not only those sorting first, so renaming 20-ignition.preset in a
// later Ignition stays safe.
func checkSnippetPreset(src snippetSource, f exptypes.File, needed []string) *Error {
	if !fspath.Below(path.Clean(f.Path), systemdPresetDir) {
		return nil
	}
	all, unreadable := snippetFileContent(f)
	if unreadable != "" {
		return src.errorf(ErrOwnedPathConflict,
			"writes the preset file %s, whose contents cannot be checked (%s): a preset could disable %s, which the provider enables",
			f.Path, unreadable, KubeadmUnitName)
	}
	if line, unit := presetDisables(all, needed); line != "" {
		return src.errorf(ErrOwnedPathConflict,
			"writes the preset file %s, whose line %q disables %s, %s", f.Path, line, unit, whyUnitMatters(unit))
	}
	return nil
}

// checkSnippetUnit rejects a unit that defines, masks or disables kubeadm.service, or that
// Ignition would write at an owned path; drop-ins of kubeadm.service are checked like any other
// drop-in file. A unit name is a glob to systemd's presets: Ignition writes `disable NAME` for a
// disabled unit, so a name matching kubeadm.service ("kube*.service") is refused like the unit
// itself. Ignition joins unit and drop-in names to the unit directory unchecked, so a name with
// "../" can reach system.control or service.d: the paths are checked as Ignition builds them.
//
// A unit the bootstrap needs (needed) may be defined over or given drop-ins, but not masked or
// disabled: kubeadm.service is ordered after it.
func checkSnippetUnit(src snippetSource, u exptypes.Unit, owned, needed []string) *Error {
	if matched, err := path.Match(u.Name, KubeadmUnitName); matched || err != nil {
		if !onlyDropins(u) {
			return kubeadmUnitConflict(src, u)
		}
	}
	if what := unitTurnedOff(u); what != "" {
		for _, n := range needed {
			if matched, err := path.Match(u.Name, n); matched || err != nil {
				unit := n
				if u.Name != n {
					unit = fmt.Sprintf("%s, which matches %s", u.Name, n)
				}
				return src.errorf(ErrOwnedPathConflict, "%s unit %s, %s", what, unit, whyUnitMatters(n))
			}
		}
	}
	unitPath := path.Join(systemdUnitDir, u.Name)
	if o := ownedConflict(unitPath, nodeFile, owned); o != "" && !keepsContents(u) {
		return src.errorf(ErrOwnedPathConflict,
			"defines unit %s, which Ignition writes at %s and conflicts with %s written by the provider", u.Name, unitPath, o)
	}
	if u.Contents != nil && kubeadmDropinPath(unitPath) {
		if problem := checkDropin(unitPath, []byte(*u.Contents)); problem != "" {
			return src.errorf(ErrOwnedPathConflict, "writes %s", problem)
		}
	}
	for _, d := range u.Dropins {
		dropinPath := path.Join(systemdUnitDir, u.Name+".d", d.Name)
		if o := ownedConflict(dropinPath, nodeFile, owned); o != "" {
			return src.errorf(ErrOwnedPathConflict,
				"adds drop-in %s to unit %s, which Ignition writes at %s and conflicts with %s written by the provider",
				d.Name, u.Name, dropinPath, o)
		}
		if kubeadmDropinPath(dropinPath) && d.Contents != nil {
			if problem := checkDropin(dropinPath, []byte(*d.Contents)); problem != "" {
				return src.errorf(ErrOwnedPathConflict, "adds %s", problem)
			}
		}
	}
	return nil
}

// onlyDropins is true for the unit entry exactly named kubeadm.service that only adds drop-ins
// (enabling it again changes nothing): merged over the provider's unit, it keeps its contents.
func onlyDropins(u exptypes.Unit) bool {
	return u.Name == KubeadmUnitName && u.Contents == nil &&
		(u.Mask == nil || !*u.Mask) && (u.Enabled == nil || *u.Enabled)
}

// keepsContents is true for a unit entry that neither defines nor masks the unit: merged over a
// unit the provider writes (the kubelet's, with source binaries), it adds drop-ins or enables it
// and keeps the provider's contents.
func keepsContents(u exptypes.Unit) bool {
	if u.Name == KubeadmUnitName {
		return onlyDropins(u)
	}
	return u.Contents == nil && (u.Mask == nil || !*u.Mask)
}

// unitTurnedOff says how a unit entry turns its unit off, "masks" or "disables", or "".
func unitTurnedOff(u exptypes.Unit) string {
	switch {
	case u.Mask != nil && *u.Mask:
		return "masks"
	case u.Enabled != nil && !*u.Enabled:
		return "disables"
	}
	return ""
}

// kubeadmUnitConflict says how a unit entry matching kubeadm.service overrides it.
func kubeadmUnitConflict(src snippetSource, u exptypes.Unit) *Error {
	what := unitTurnedOff(u)
	if what == "" {
		what = "defines"
	}
	unit := KubeadmUnitName
	if u.Name != KubeadmUnitName {
		unit = fmt.Sprintf("%s, which matches %s", u.Name, KubeadmUnitName)
	}
	return src.errorf(ErrOwnedPathConflict,
		"%s unit %s, which the provider owns (drop-ins for it are allowed)", what, unit)
}

// maxPresetBytes bounds what a compressed preset file may expand to while it is checked; preset
// files are a few lines, and a larger one is refused rather than decompressed without limit.
const maxPresetBytes = 1 << 20

// resourceContent returns the contents of an Ignition resource that is a data URL, gunzipped if
// compressed, or why they cannot be read here. A resource without a source has no contents.
func resourceContent(r exptypes.Resource) (content []byte, unreadable string) {
	if r.Source == nil || *r.Source == "" {
		return nil, ""
	}
	content, err := decodeResource(*r.Source, r.Compression, maxPresetBytes)
	switch {
	case errors.Is(err, errNotDataURL):
		return nil, errNotDataURL.Error()
	case errors.Is(err, errTooLarge):
		return nil, fmt.Sprintf("more than %d bytes decompressed", maxPresetBytes)
	case errors.Is(err, errNotGzip):
		return nil, "the gzip data is not valid"
	case err != nil: // an unknown compression
		return nil, err.Error()
	}
	return content, ""
}

// presetDisables returns the first line of a systemd preset file that disables kubeadm.service
// or one of the needed units ("disable kubeadm.service", "disable kube*", "disable *"), with
// the unit, or "". Every word after "disable" is taken for a pattern, and a pattern path.Match
// cannot read counts as a match: an unsure answer refuses.
func presetDisables(content []byte, needed []string) (line, unit string) {
	units := append([]string{KubeadmUnitName}, needed...)
	for _, line := range strings.Split(string(content), "\n") {
		words := strings.Fields(line)
		if len(words) < 2 || words[0] != "disable" {
			continue
		}
		for _, pattern := range words[1:] {
			for _, unit := range units {
				if matched, err := path.Match(pattern, unit); matched || err != nil {
					return strings.TrimSpace(line), unit
				}
			}
		}
	}
	return "", ""
}

// whyUnitMatters says why the bootstrap needs unit, for a message refusing to turn it off.
func whyUnitMatters(unit string) string {
	if unit == KubeadmUnitName {
		return "which the provider enables"
	}
	return "which the bootstrap needs (" + KubeadmUnitName + " runs after it)"
}

// neededUnitPath says why a node at p would turn off a unit the bootstrap needs: a file or link
// at its unit path under /etc/systemd/system replaces it, and a link to /dev/null masks it.
// Drop-ins (in the unit's .d directory) are fine.
func neededUnitPath(p string, needed []string) string {
	p = path.Clean(p)
	for _, unit := range needed {
		if p == path.Join(systemdUnitDir, unit) {
			return fmt.Sprintf("which replaces or masks %s, %s", unit, whyUnitMatters(unit))
		}
	}
	return ""
}

// readOnlyDirs are read-only on both variants' booted systems: Ignition fails the boot writing
// there (Flatcar's /usr is a verity-checked image, Fedora CoreOS's an OSTree deployment).
var readOnlyDirs = []string{"/usr"}

// readOnlyPath says why nothing may be written at p, or "".
func readOnlyPath(p string) string {
	p = path.Clean(p)
	for _, dir := range readOnlyDirs {
		if p == dir || fspath.Below(p, dir) {
			return fmt.Sprintf("under %s, which is read-only on the node: Ignition would fail the boot "+
				"(put binaries in /opt/bin, configuration in /etc)", dir)
		}
	}
	return ""
}

// verificationHashes are the hash functions Ignition verifies with, and the length of their
// hex digests.
var verificationHashes = map[string]int{"sha256": 64, "sha512": 128}

// checkVerification refuses a verification hash Ignition accepts but that can never match: a
// digest of the right length that is not hexadecimal (Ignition checks only the length). what
// names the resource.
func checkVerification(src snippetSource, what string, v exptypes.Verification) *Error {
	if v.Hash == nil {
		return nil
	}
	function, sum, found := strings.Cut(*v.Hash, "-")
	if size, known := verificationHashes[function]; !found || !known || len(sum) != size {
		return nil // Ignition's own validation reports it
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return src.errorf(src.invalid, "verifies %s with a %s hash that is not hexadecimal, so it can never match", what, function)
	}
	return nil
}

// checkFiles validates the user's files and the provider's other files: absolute paths, no
// path twice, nothing under the read-only /usr, sane modes and owners, no file at a path the
// provider or its Kubernetes source owns, presets and unit files that leave kubeadm.service and
// the units it needs on, and drop-ins of kubeadm.service that keep its contract. provider are
// the files the input makes the provider write (certificates, the discovery kubeconfig): they
// are checked against the fixed owned paths and the source's. Each file's first problem is
// returned, for every file.
func checkFiles(provider []ownedFile, inst *kubernetesInstall, files []File, md *metadataSource) []*Error {
	needed := neededUnits(inst, md)
	seen := map[string]Place{}
	// part places the member at fault inside a user's file (files[2].owner); a provider file
	// (certificates[i], the discovery kubeconfig) is placed as a whole.
	check := func(f File, owned []string, part func(Member) Place) *Error {
		if !path.IsAbs(f.Path) {
			return errorf(ErrInvalidInput, part(FilePath), "path %q is not absolute", f.Path).withValue(f.Path)
		}
		clean := path.Clean(f.Path)
		if clean == "/" {
			return errorf(ErrInvalidInput, part(FilePath), "path %q is the root directory", f.Path).withValue(f.Path)
		}
		if o := ownedConflict(clean, nodeFile, owned); o != "" {
			return errorf(ErrOwnedPathConflict, part(FilePath), "path %s conflicts with %s written by the provider", f.Path, o).withValue(f.Path)
		}
		if problem := readOnlyPath(clean); problem != "" {
			return errorf(ErrInvalidInput, part(FilePath), "path %s is %s", f.Path, problem).withValue(f.Path)
		}
		if problem := neededUnitPath(clean, needed); problem != "" {
			return errorf(ErrOwnedPathConflict, part(FilePath), "path %s is a unit file, %s", f.Path, problem).withValue(f.Path)
		}
		if other, dup := seen[clean]; dup {
			return errorf(ErrInvalidInput, part(FilePath), "path %s is also written by %s", f.Path, other).withValue(f.Path)
		}
		seen[clean] = part("")
		if fspath.Below(clean, systemdPresetDir) {
			if line, unit := presetDisables(f.Content, needed); line != "" {
				return errorf(ErrOwnedPathConflict, part(FileContent), "preset file %s has line %q, which disables %s, %s",
					f.Path, line, unit, whyUnitMatters(unit))
			}
		}
		if kubeadmDropinPath(clean) {
			if problem := checkDropin(clean, f.Content); problem != "" {
				return errorf(ErrOwnedPathConflict, part(FileContent), "%s", problem)
			}
		}
		if managerConfigPath(clean) {
			if problem := checkManagerConfig(clean, f.Content); problem != "" {
				return errorf(ErrOwnedPathConflict, part(FileContent), "%s", problem)
			}
		}
		if f.Mode < 0 || f.Mode > 0o7777 {
			return errorf(ErrInvalidInput, part(FileMode), "mode %#o is not a file mode (0 to 07777)", f.Mode)
		}
		if _, _, err := parseOwner(f.Owner); err != nil {
			return errorf(ErrInvalidInput, part(FileOwner), "owner: %v", err).withValue(f.Owner)
		}
		return nil
	}
	rep := &Report{}
	// The source's own files are among its owned paths; the other provider files may not
	// write there (a discovery kubeconfig at the sysext link, say).
	for _, p := range inst.ownedFiles() {
		rep.add(check(p.File, ownedPaths, p.whole))
	}
	providerOwned := append(append([]string(nil), ownedPaths...), inst.owned...)
	for _, p := range provider {
		rep.add(check(p.File, providerOwned, p.whole))
	}
	owned := append(append(providerOwned, ownedFilePaths(provider)...), ownedFilePaths(inst.ownedFiles())...)
	for i, f := range files {
		rep.add(check(f, owned, userFile(i)))
	}
	return rep.Errors
}

// whole places a provider file's problem at the file's place, whatever member is at fault.
func (f ownedFile) whole(Member) Place { return f.place }

// neededUnits are the units kubeadm.service is ordered after and wants, besides the image's
// own: the Kubernetes source's (systemd-sysext.service for sysext) and the metadata service
// that names the node. Turning one off stalls or breaks the bootstrap.
func neededUnits(inst *kubernetesInstall, md *metadataSource) []string {
	needed := slices.Clone(inst.after)
	if md != nil {
		needed = append(needed, md.service)
	}
	return needed
}

// userFile places the user's file i, or one of its members: userFile(2)(FileOwner) is
// files[2].owner, userFile(2)("") is files[2].
func userFile(i int) func(Member) Place {
	return func(m Member) Place {
		if m == "" {
			return Entry(PartFile, i)
		}
		return Entry(PartFile, i, m)
	}
}

// checkSnippetAgainstFiles rejects a snippet writing a file, directory or link at the path of
// one of the user's files. Ignition merges files, directories and links by path: a file would be
// merged with the user's field by field, and neither would win cleanly; a directory or link
// would silently replace the user's file.
func checkSnippetAgainstFiles(s *snippet, files []File) []*Error {
	src := s.source
	var errs []*Error
	for _, n := range s.nodes() {
		for i, uf := range files {
			if path.Clean(n.path) != path.Clean(uf.Path) {
				continue
			}
			if n.kind == nodeFile {
				errs = append(errs, src.errorf(ErrInvalidInput, "writes %s, which %s writes too", n.path, Entry(PartFile, i)))
			} else {
				errs = append(errs, src.errorf(ErrInvalidInput,
					"writes a %s at %s, where %s writes a file: Ignition would drop the file", n.kind, n.path, Entry(PartFile, i)))
			}
			break
		}
	}
	return errs
}

// node is a file, directory or link a config writes.
type node struct {
	path string
	kind nodeKind
}

// nodes lists the files, directories and links of the snippet.
func (s *snippet) nodes() []node {
	storage := s.config.Storage
	var nodes []node
	for _, f := range storage.Files {
		nodes = append(nodes, node{f.Path, nodeFile})
	}
	for _, d := range storage.Directories {
		nodes = append(nodes, node{d.Path, nodeDirectory})
	}
	for _, l := range storage.Links {
		nodes = append(nodes, node{l.Path, nodeLink})
	}
	return nodes
}

func ownedFilePaths(files []ownedFile) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, path.Clean(f.Path))
	}
	return out
}

// certificateFiles places the certificates at their entries of the input.
func certificateFiles(certificates []File) []ownedFile {
	out := make([]ownedFile, 0, len(certificates))
	for i, c := range certificates {
		out = append(out, ownedFile{File: c, place: Entry(PartCertificate, i)})
	}
	return out
}
