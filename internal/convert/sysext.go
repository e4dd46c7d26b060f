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

package convert

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	clctypes "github.com/flatcar/container-linux-config-transpiler/config/types"
	"gopkg.in/yaml.v3"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// The providers' flatcar-sysext flavors (CAPO, CAPZ, CAPV) write the Kubernetes system extension
// in the Container Linux Config at the sysext bakery's documented paths, the renderer's
// (ignition.SysextLink, ignition.SysextDir, the sysupdate files), which it writes itself for
// spec.kubernetes source sysext and refuses from a user's snippet.
const (
	// kubernetesVersionVariable is clusterctl's variable for the cluster's version, which the
	// flavors put in the image's name; the converted config takes the Machine's version instead.
	kubernetesVersionVariable = "${KUBERNETES_VERSION}"
	// SysextDigestsConfigMap and SysextDigestsKey are the ConfigMap key a converted sysext
	// source reads its image's digest from (spec.kubernetes.digestsFrom).
	SysextDigestsConfigMap = "kubernetes-sysext-digests"
	SysextDigestsKey       = "SHA256SUMS"
	// sysextConfigField is where the findings of the mapping point.
	sysextConfigField = "ignition.containerLinuxConfig.additionalConfig"
)

var (
	// bakeryReleaseDir is a release of the sysext bakery on GitHub (latest, or a per-image tag such
	// as kubernetes-v1.32.2): where the flavors downloaded from before the bakery moved.
	bakeryReleaseDir = regexp.MustCompile(`^https://github\.com/flatcar/sysext-bakery/releases/download/[^/]+$`)
)

// clcEntry is one entry of a list in the Container Linux Config (a file, a link, a unit, a
// drop-in) and the list holding it, so that it can be removed in place.
type clcEntry struct {
	list  *yaml.Node
	entry *yaml.Node
}

func (e clcEntry) remove() {
	e.list.Content = slices.DeleteFunc(e.list.Content, func(n *yaml.Node) bool { return n == e.entry })
}

// clcDocument is the parts of a Container Linux Config the sysext flavors write to, as yaml.Node
// so that the rest of the user's document (order, comments) is kept when entries are removed.
type clcDocument struct {
	root               *yaml.Node // the document node
	config             *yaml.Node // its top-level mapping
	storage, systemd   *yaml.Node // mappings, nil when absent
	files, links, dirs *yaml.Node // sequences under storage, nil when absent
	units              *yaml.Node // the sequence under systemd, nil when absent
}

// readCLC reads doc; ok is false when it is not a mapping the flavors' entries can be in (the
// renderer reports a document it cannot read).
func readCLC(doc string) (*clcDocument, bool) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		return nil, false
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, false
	}
	d := &clcDocument{root: &root, config: root.Content[0]}
	d.storage = mappingOf(d.config, "storage")
	d.systemd = mappingOf(d.config, "systemd")
	d.files = sequenceOf(d.storage, "files")
	d.links = sequenceOf(d.storage, "links")
	d.dirs = sequenceOf(d.storage, "directories")
	d.units = sequenceOf(d.systemd, "units")
	return d, true
}

func mappingOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	if v := mappingValue(m, key); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	return nil
}

func sequenceOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	if v := mappingValue(m, key); v != nil && v.Kind == yaml.SequenceNode {
		return v
	}
	return nil
}

// scalarOf is the value of a scalar key of an entry, "" when absent or not a scalar.
func scalarOf(entry *yaml.Node, key string) string {
	if entry.Kind != yaml.MappingNode {
		return ""
	}
	if v := mappingValue(entry, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// entries are the entries of list whose scalar key (path, name) matches.
func entries(list *yaml.Node, key string, match func(string) bool) []clcEntry {
	if list == nil {
		return nil
	}
	var out []clcEntry
	for _, e := range list.Content {
		if match(scalarOf(e, key)) {
			out = append(out, clcEntry{list: list, entry: e})
		}
	}
	return out
}

func equals(want string) func(string) bool { return func(s string) bool { return s == want } }

func under(dir string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, dir+"/") }
}

// dropEmpty removes key from m when its value is a list or mapping left empty.
func dropEmpty(m *yaml.Node, key string) {
	if m == nil {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		v := m.Content[i+1]
		if m.Content[i].Value == key && (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode) && len(v.Content) == 0 {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// deleteKeys removes keys from the mapping m.
func deleteKeys(m *yaml.Node, keys ...string) {
	for i := 0; i+1 < len(m.Content); {
		if slices.Contains(keys, m.Content[i].Value) {
			m.Content = slices.Delete(m.Content, i, i+2)
			continue
		}
		i += 2
	}
}

// encode writes the document back; a document left without anything is "".
func (d *clcDocument) encode() (string, error) {
	for _, key := range []string{"files", "links", "directories"} {
		dropEmpty(d.storage, key)
	}
	dropEmpty(d.systemd, "units")
	dropEmpty(d.config, "storage")
	dropEmpty(d.config, "systemd")
	if len(d.config.Content) == 0 {
		return "", nil
	}
	return encodeYAML(d.root)
}

// sysextImage is the Kubernetes system extension image a flavor installs, as its link and file
// say.
type sysextImage struct {
	link, file clcEntry
	// version is as written: ${KUBERNETES_VERSION} or a release such as v1.32.2.
	version string
	arch    cabpiv1.Architecture
	// url is the file's remote URL, dir its directory; baseURL is dir when that is not the
	// bakery (a mirror).
	url, dir, baseURL string
}

// findSysextImage finds the link at /etc/extensions/kubernetes.raw and the image it points to.
// found is false when the document has neither (nothing to map); reason says why what it has
// cannot be mapped onto spec.kubernetes.
func findSysextImage(d *clcDocument) (img sysextImage, found bool, reason string) {
	links := entries(d.links, "path", equals(ignition.SysextLink))
	inImageDir := slices.Concat(entries(d.files, "path", under(ignition.SysextDir)),
		entries(d.links, "path", under(ignition.SysextDir)), entries(d.dirs, "path", under(ignition.SysextDir)))
	if len(links) == 0 && len(inImageDir) == 0 {
		return img, false, ""
	}
	switch len(links) {
	case 0:
		return img, true, fmt.Sprintf("it writes under %s but has no link at %s, which systemd-sysext reads", ignition.SysextDir, ignition.SysextLink)
	case 1:
	default:
		return img, true, fmt.Sprintf("it has %d links at %s", len(links), ignition.SysextLink)
	}
	img.link = links[0]
	var link clctypes.Link
	if err := img.link.entry.Decode(&link); err != nil {
		return img, true, fmt.Sprintf("the link at %s is not a Container Linux Config link (%v)", ignition.SysextLink, err)
	}
	if reason := linkExtras(link); reason != "" {
		return img, true, fmt.Sprintf("the link at %s %s, which spec.kubernetes does not write", ignition.SysextLink, reason)
	}
	dir, name := path.Split(link.Target)
	version, arch, ok := ignition.ParseSysextImageName(name)
	if path.Clean(dir) != ignition.SysextDir || !ok {
		return img, true, fmt.Sprintf("the link's target %s is not %s/kubernetes-<version>-<x86-64|arm64>.raw", link.Target, ignition.SysextDir)
	}
	img.version, img.arch = version, arch
	if img.version != kubernetesVersionVariable && !ignition.SysextVersion(img.version) {
		return img, true, fmt.Sprintf("the version %s in the image's name is neither %s nor a release such as v1.32.2", img.version, kubernetesVersionVariable)
	}
	for _, e := range inImageDir {
		if p := scalarOf(e.entry, "path"); p != link.Target || e.list != d.files {
			return img, true, fmt.Sprintf("it also writes %s, and spec.kubernetes owns %s", p, ignition.SysextDir)
		}
	}
	switch len(inImageDir) {
	case 0:
		return img, true, fmt.Sprintf("there is no file at the link's target %s", link.Target)
	case 1:
	default:
		return img, true, fmt.Sprintf("it writes the file %s %d times", link.Target, len(inImageDir))
	}
	img.file = inImageDir[0]
	var file clctypes.File
	if err := img.file.entry.Decode(&file); err != nil {
		return img, true, fmt.Sprintf("the file at %s is not a Container Linux Config file (%v)", link.Target, err)
	}
	if reason := fileExtras(file); reason != "" {
		return img, true, fmt.Sprintf("the file at %s %s, which spec.kubernetes does not (it downloads the image as it is, owned by root)", link.Target, reason)
	}
	img.url = file.Contents.Remote.Url
	if img.url == "" {
		return img, true, fmt.Sprintf("the file at %s is not downloaded (contents.remote.url)", link.Target)
	}
	urlDir, urlName := path.Split(img.url)
	if urlName != name {
		return img, true, fmt.Sprintf("the file at %s downloads %s, not %s", link.Target, img.url, name)
	}
	img.dir = strings.TrimSuffix(urlDir, "/")
	if isBakery(img.dir) {
		return img, true, ""
	}
	if reason := mirrorProblem(img.dir, img.version); reason != "" {
		return img, true, fmt.Sprintf("the image's URL %s: %s", img.url, reason)
	}
	img.baseURL = img.dir
	return img, true, ""
}

// linkExtras says what the link carries beyond the symbolic link the renderer writes.
func linkExtras(l clctypes.Link) string {
	switch {
	case l.Hard:
		return "is a hard link"
	case l.User != nil || l.Group != nil:
		return "sets an owner"
	case l.Filesystem != "" && l.Filesystem != "root":
		return fmt.Sprintf("is on filesystem %q", l.Filesystem)
	}
	return ""
}

// fileExtras says what the image's file carries beyond a plain download.
func fileExtras(f clctypes.File) string {
	switch {
	case f.Contents.Inline != "" || f.Contents.Local != "":
		return "has inline or local contents"
	case f.Contents.Remote.Compression != "":
		return "is compressed (" + f.Contents.Remote.Compression + ")"
	case f.Contents.Remote.Verification.Hash.Sum != "":
		return "is verified against a hash"
	case f.Append:
		return "is appended to"
	case f.User != nil || f.Group != nil:
		return "sets an owner"
	case f.Filesystem != "" && f.Filesystem != "root":
		return fmt.Sprintf("is on filesystem %q", f.Filesystem)
	}
	return ""
}

// isBakery reports whether dir is the Flatcar sysext bakery: its current layout (the default of
// spec.kubernetes.sysext.baseURL) or its GitHub releases, which it no longer serves Kubernetes
// images from in the same layout.
func isBakery(dir string) bool {
	return dir == cabpiv1.DefaultSysextBaseURL || bakeryReleaseDir.MatchString(dir)
}

// mirrorProblem says why dir cannot be spec.kubernetes.sysext.baseURL, which the renderer
// checks the same way and which serves every version from one directory.
func mirrorProblem(dir, version string) string {
	if strings.Contains(dir, "${") {
		return "its directory has a clusterctl variable, and the converted config must render as it is: set spec.kubernetes.sysext.baseURL yourself"
	}
	if strings.Contains(dir, version) {
		return "its directory names the version, and spec.kubernetes.sysext.baseURL serves every version from one directory"
	}
	if problem := ignition.BaseURLProblem(dir); problem != "" {
		return "its directory " + problem + ", and spec.kubernetes.sysext.baseURL cannot take it"
	}
	return ""
}

// sysupdateConfig is the flavor's systemd-sysupdate configuration for the extension: the bakery's
// sysupdate file for the minor, noop.conf, the drop-in that runs the update and flags a reboot,
// and the timer (usually disabled).
type sysupdateConfig struct {
	conf, noop, dropin []clcEntry
	// service is the systemd-sysupdate.service entry holding the drop-in.
	service *yaml.Node
	timer   []clcEntry
}

func findSysupdate(d *clcDocument) sysupdateConfig {
	s := sysupdateConfig{
		conf:  entries(d.files, "path", under(ignition.SysupdateConfDir)),
		noop:  entries(d.files, "path", equals(ignition.SysupdateNoopPath)),
		timer: entries(d.units, "name", equals(ignition.SysupdateTimer)),
	}
	for _, service := range entries(d.units, "name", equals(ignition.SysupdateService)) {
		if dropins := sequenceOf(service.entry, "dropins"); dropins != nil {
			if found := entries(dropins, "name", equals(ignition.SysupdateDropin)); len(found) > 0 {
				s.dropin, s.service = found, service.entry
			}
		}
	}
	return s
}

// missing names the parts of the configuration the document lacks.
func (s sysupdateConfig) missing() []string {
	var out []string
	if len(s.conf) == 0 {
		out = append(out, "a file in "+ignition.SysupdateConfDir)
	}
	if len(s.noop) == 0 {
		out = append(out, ignition.SysupdateNoopPath)
	}
	if len(s.dropin) == 0 {
		out = append(out, ignition.SysupdateService+"'s drop-in "+ignition.SysupdateDropin)
	}
	return out
}

func (s sysupdateConfig) any() bool { return len(s.conf)+len(s.noop)+len(s.dropin) > 0 }

// remove removes the files and the drop-in, and the service's entry when the drop-in was all it
// carried.
func (s sysupdateConfig) remove(d *clcDocument) {
	for _, e := range slices.Concat(s.conf, s.noop, s.dropin) {
		e.remove()
	}
	if s.service == nil {
		return
	}
	dropEmpty(s.service, "dropins")
	if onlyKeys(s.service, "name") {
		clcEntry{list: d.units, entry: s.service}.remove()
	}
}

// onlyKeys reports whether the mapping m has no other keys than keys.
func onlyKeys(m *yaml.Node, keys ...string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !slices.Contains(keys, m.Content[i].Value) {
			return false
		}
	}
	return true
}

// timerEnabled reports whether a timer entry enables systemd-sysupdate.timer (enabled: true, or
// CLC's older enable: true).
func timerEnabled(timer []clcEntry) (bool, error) {
	for _, t := range timer {
		var u clctypes.SystemdUnit
		if err := t.entry.Decode(&u); err != nil {
			return false, fmt.Errorf("reading the %s unit: %w", ignition.SysupdateTimer, err)
		}
		if u.Enable || (u.Enabled != nil && *u.Enabled) {
			return true, nil
		}
	}
	return false, nil
}

// mapKubernetesSysext maps the providers' flatcar-sysext flavor in the Container Linux Config doc
// onto spec.kubernetes: it returns the document without the entries spec.kubernetes now writes
// (the renderer refuses a snippet that writes them) and the spec. A document without the flavor,
// or with only part of it, is returned as it is (with a note saying why it was not mapped).
func mapKubernetesSysext(doc string, f *findings) (string, cabpiv1.KubernetesSpec, error) {
	d, ok := readCLC(doc)
	if !ok {
		return doc, cabpiv1.KubernetesSpec{}, nil
	}
	img, found, reason := findSysextImage(d)
	if !found {
		return doc, cabpiv1.KubernetesSpec{}, nil
	}
	if reason != "" {
		f.note(sysextConfigField, "not mapped onto spec.kubernetes (source sysext): %s; the Container Linux Config is kept as it is and installs Kubernetes itself", reason)
		return doc, cabpiv1.KubernetesSpec{}, nil
	}
	k := cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: img.arch}
	sysext := cabpiv1.SysextSource{BaseURL: img.baseURL}
	img.link.remove()
	img.file.remove()

	sysupdate := findSysupdate(d)
	sysupdateMapped := false
	// The notes on sysupdate follow the note on the mapping, which they refine.
	var sysupdateNote string
	switch missing := sysupdate.missing(); {
	case len(missing) == 0:
		enabled, err := timerEnabled(sysupdate.timer)
		if err != nil {
			return "", k, fmt.Errorf("mapping systemd-sysupdate onto spec.kubernetes.sysext.sysupdate: %w", err)
		}
		sysupdate.remove(d)
		sysupdateMapped = true
		sysext.Sysupdate = enabled
		for _, t := range sysupdate.timer {
			switch {
			case onlyKeys(t.entry, "name", "enabled", "enable"):
				// Enabled, spec.kubernetes enables the timer itself; disabled, the entry says
				// nothing Flatcar does not do already (the timer is off unless enabled).
				t.remove()
			case enabled:
				// The entry carries more (drop-ins): keep that, spec.kubernetes enables the timer.
				deleteKeys(t.entry, "enabled", "enable")
			}
		}
		if !enabled {
			sysupdateNote = "systemd-sysupdate was configured but its timer disabled; spec.kubernetes.sysext.sysupdate: true turns it on (it stages newer patch releases of the Machine's minor and flags /run/reboot-required)"
		}
	case sysupdate.any():
		sysupdateNote = fmt.Sprintf("systemd-sysupdate is configured only in part (no %s): not mapped onto spec.kubernetes.sysext.sysupdate, its entries are kept as they are", strings.Join(missing, ", no "))
	}
	if sysext != (cabpiv1.SysextSource{}) {
		k.Sysext = &sysext
	}
	// The image is pinned to a digest the user chose (docs/adr/046): the flavor had none.
	k.DigestsFrom = &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: SysextDigestsConfigMap, Key: SysextDigestsKey}}

	what := "the link at " + ignition.SysextLink + " and the image it points to"
	if sysupdateMapped {
		what += ", with its systemd-sysupdate configuration,"
	}
	where := "the bakery's current layout, " + cabpiv1.DefaultSysextBaseURL + " (spec.kubernetes.sysext.baseURL unset)"
	if k.Sysext != nil && k.Sysext.BaseURL != "" {
		where = "the mirror " + k.Sysext.BaseURL + " (spec.kubernetes.sysext.baseURL), which must serve the bakery's current layout: kubernetes-<version>-<x86-64|arm64>.raw, and kubernetes/kubernetes-<minor>.conf and noop.conf for sysupdate"
	}
	moved := ""
	if bakeryReleaseDir.MatchString(img.dir) {
		moved = fmt.Sprintf("; the source downloaded %s from the bakery's GitHub releases, whose URLs moved (cluster-api-provider-openstack#2600)", path.Base(img.url))
	}
	f.note(sysextConfigField, "%s are now spec.kubernetes (source sysext, arch %s): the Kubernetes system extension is downloaded from %s%s", what, k.Arch, where, moved)
	f.note(sysextConfigField, "the image is pinned to its SHA-256 from ConfigMap %s key %s (spec.kubernetes.digestsFrom), which you create in the "+
		"cluster's namespace before the Machines: the bakery's kubernetes/SHA256SUMS, or your mirror's, as read once and reviewed (docs/guide/air-gapped.md)",
		SysextDigestsConfigMap, SysextDigestsKey)
	if sysupdateNote != "" {
		f.note(sysextConfigField, "%s", sysupdateNote)
	}
	if img.version != kubernetesVersionVariable {
		f.note(sysextConfigField, "the image's version %s is dropped: spec.kubernetes installs the version of the Machine's spec.version (its MachineDeployment's, KubeadmControlPlane's or Cluster topology's); check that it is %s", img.version, img.version)
	}
	out, err := d.encode()
	if err != nil {
		return "", k, fmt.Errorf("writing the Container Linux Config without the system extension's entries: %w", err)
	}
	return out, k, nil
}
