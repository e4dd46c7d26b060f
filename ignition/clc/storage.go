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

package clc

import (
	"path"
	"reflect"
	"strings"

	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"k8s.io/utils/ptr"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/escape"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/fspath"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/optional"
)

// Where Ignition 2 wrote networkd units and how, and the root filesystem as Ignition 2 saw it
// in the initramfs.
const (
	networkdUnitDir = "/etc/systemd/network"
	networkdMode    = 0o644
	sysroot         = "/sysroot"
)

// storage translates filesystems first (files are placed by them), then disks, RAID arrays,
// files (networkd units among them), directories and links.
func (t *v2to3) storage(in v2types.Config, out *v3types.Config) *Error {
	var cerr *Error
	s := &out.Storage
	if s.Filesystems, cerr = t.filesystemsOf(in.Storage.Filesystems); cerr != nil {
		return cerr
	}
	if s.Disks, cerr = t.disks(in.Storage.Disks); cerr != nil {
		return cerr
	}
	if s.Raid, cerr = t.raid(in.Storage.Raid); cerr != nil {
		return cerr
	}
	if s.Files, cerr = t.files(in); cerr != nil {
		return cerr
	}
	if s.Directories, cerr = t.directories(in.Storage.Directories); cerr != nil {
		return cerr
	}
	s.Links, cerr = t.links(in.Storage.Links)
	return cerr
}

// filesystemsOf translates the filesystems Ignition 2 created (those with mount) and records
// every filesystem by name for placing files. One with a path is only an address: Ignition 2
// wrote files under it, and so do their 3.x paths.
func (t *v2to3) filesystemsOf(in []v2types.Filesystem) ([]v3types.Filesystem, *Error) {
	var entries []located[v3types.Filesystem]
	for _, fs := range in {
		r := t.ref(listFilesystems, fs.Name)
		t.filesystems[fs.Name] = fs
		m := fs.Mount
		if m == nil {
			continue
		}
		f3 := v3types.Filesystem{
			Device:         m.Device,
			Format:         optional.String(m.Format),
			Label:          optional.Copy(m.Label),
			UUID:           optional.Copy(m.UUID),
			WipeFilesystem: optional.True(m.WipeFilesystem),
		}
		// Ignition 2's options (and create's) are mkfs options, as 3.x's options are.
		for _, o := range m.Options {
			f3.Options = append(f3.Options, v3types.FilesystemOption(o))
		}
		if c := m.Create; c != nil {
			for _, o := range c.Options {
				f3.Options = append(f3.Options, v3types.FilesystemOption(o))
			}
			if c.Force {
				f3.WipeFilesystem = ptr.To(true) // create with force always made a new filesystem
			} else {
				t.warn(r, []any{"mount", "create"}, "filesystem %s: Ignition 2 failed on a device already holding a filesystem "+
					"(create without force); Ignition 3 reuses a filesystem of the same format, label and UUID and fails on any other", fs.Name)
			}
		}
		entries = append(entries, located[v3types.Filesystem]{f3, r})
	}
	return dedupe(t, entries, func(f v3types.Filesystem) string { return f.Device }, "filesystem device")
}

// nodeRoot is where, in the root, Ignition 2 wrote the files, directories and links of the
// node's filesystem: "" for the root itself. A filesystem Ignition 2 mounted only to write them
// has no place in the root, and one outside /sysroot was the initramfs, gone at boot: neither
// can be said in 3.x.
func (t *v2to3) nodeRoot(n v2types.Node, r entryRef) (string, *Error) {
	fs, defined := t.filesystems[n.Filesystem]
	switch {
	case !defined && n.Filesystem == "root":
		return "", nil
	case !defined:
		return "", t.fail(r, []any{"filesystem"}, "%s is on filesystem %q, which storage.filesystems does not define", n.Path, n.Filesystem)
	case fs.Path == nil:
		return "", t.fail(r, []any{"filesystem"}, "%s is on filesystem %q, which Ignition 2 mounted only to write it: Ignition 3 writes by path "+
			"in the root, and a Container Linux Config does not say where that filesystem is mounted; write the config in Butane "+
			"(spec.butane), with the filesystem's path", n.Path, n.Filesystem)
	}
	root := path.Clean(*fs.Path)
	switch {
	case root == sysroot:
		return "", nil
	case fspath.Below(root, sysroot):
		return strings.TrimPrefix(root, sysroot), nil
	}
	return "", t.fail(r, []any{"filesystem"}, "%s is on filesystem %q at %s, outside %s: Ignition 2 wrote it in the initramfs, "+
		"where it is gone at boot; Ignition 3 writes only to the root", n.Path, n.Filesystem, *fs.Path, sysroot)
}

// under is p on a filesystem at root ("" for the root filesystem).
func under(root, p string) string {
	if root == "" {
		return p
	}
	return path.Join(root, p)
}

// v3Node translates the path and owner of a file, directory or link.
func v3Node(n v2types.Node, p string) v3types.Node {
	out := v3types.Node{Path: p, Overwrite: optional.Copy(n.Overwrite)}
	if u := n.User; u != nil {
		out.User = v3types.NodeUser{ID: optional.Copy(u.ID), Name: optional.String(u.Name)}
	}
	if g := n.Group; g != nil {
		out.Group = v3types.NodeGroup{ID: optional.Copy(g.ID), Name: optional.String(g.Name)}
	}
	return out
}

// files translates the files and the networkd units, and makes one entry per path.
//
// Ignition 2's defaults become explicit: a file not appended to overwrites what is at its path
// unless it says otherwise, is empty without a source, and has mode 0000 without one (3.x would
// give 0644). An appending file's contents are 3.x's append.
func (t *v2to3) files(in v2types.Config) ([]v3types.File, *Error) {
	var entries []located[v3types.File]
	for _, f := range in.Storage.Files {
		r := t.ref(listFiles, f.Path)
		root, cerr := t.nodeRoot(f.Node, r)
		if cerr != nil {
			return nil, cerr
		}
		f3 := v3types.File{Node: v3Node(f.Node, under(root, f.Path))}
		source := []any{"contents", "remote", "url"}
		if f.Append {
			res, cerr := t.resource(r, source, f.Contents.Source, f.Contents.Compression, f.Contents.Verification)
			if cerr != nil {
				return nil, cerr
			}
			f3.Append, f3.Mode = []v3types.Resource{res}, optional.Copy(f.Mode)
			if f.Overwrite != nil {
				t.warn(r, []any{"overwrite"}, "file %s appends with overwrite false: Ignition 2 failed when the file existed; Ignition 3 appends to it", f.Path)
			}
		} else {
			src := f.Contents.Source
			if src == "" {
				src = "data:," // Ignition 2 wrote an empty file
			}
			res, cerr := t.resource(r, source, src, f.Contents.Compression, f.Contents.Verification)
			if cerr != nil {
				return nil, cerr
			}
			f3.Contents, f3.Mode = res, ptr.To(ptr.Deref(f.Mode, 0))
			if f3.Overwrite == nil {
				f3.Overwrite = ptr.To(true)
			}
		}
		entries = append(entries, located[v3types.File]{f3, r})
	}
	entries = append(entries, t.networkdFiles(in.Networkd)...)
	return t.mergeFiles(entries)
}

// networkdFiles are the files Ignition 2 wrote for networkd units and their drop-ins (those
// with contents), mode 0644, replacing what was there.
func (t *v2to3) networkdFiles(in v2types.Networkd) []located[v3types.File] {
	var out []located[v3types.File]
	add := func(p, contents string, r entryRef) {
		out = append(out, located[v3types.File]{v3types.File{
			Node:          v3types.Node{Path: p, Overwrite: ptr.To(true)},
			FileEmbedded1: v3types.FileEmbedded1{Mode: ptr.To(networkdMode), Contents: v3types.Resource{Source: ptr.To(escape.DataURL([]byte(contents)))}},
		}, r})
	}
	for _, u := range in.Units {
		r := t.ref(listNetworkd, u.Name)
		if u.Contents != "" {
			add(path.Join(networkdUnitDir, u.Name), u.Contents, r)
		}
		for _, d := range u.Dropins {
			if d.Contents != "" {
				add(path.Join(networkdUnitDir, u.Name+".d", d.Name), d.Contents, r)
			}
		}
	}
	return out
}

// mergeFiles makes one entry per path. Ignition 2 applied file entries in turn: a file written
// and then appended to by later entries is one 3.x entry with contents and appends, its mode
// and owner those the last entry setting them left. A later entry writing the path again is
// refused, unless it writes exactly the same.
func (t *v2to3) mergeFiles(entries []located[v3types.File]) ([]v3types.File, *Error) {
	var out []v3types.File
	index := map[string]int{}
	for _, e := range entries {
		k := path.Clean(e.v.Path)
		i, dup := index[k]
		switch {
		case !dup:
			index[k] = len(out)
			out = append(out, e.v)
		case e.v.Append == nil:
			if !reflect.DeepEqual(out[i], e.v) {
				return nil, t.fail(e.ref, nil, "file %s is written again by a later entry: Ignition 3 takes one entry per path; "+
					"keep one, or append to the file (append: true)", e.v.Path)
			}
		default:
			m := &out[i]
			m.Append = append(m.Append, e.v.Append...)
			if e.v.Mode != nil {
				m.Mode = e.v.Mode
			}
			if e.v.User.ID != nil || e.v.User.Name != nil {
				m.User = e.v.User
			}
			if e.v.Group.ID != nil || e.v.Group.Name != nil {
				m.Group = e.v.Group
			}
		}
	}
	return out, nil
}

// directories translates directories, mode 0000 without one as in Ignition 2 (3.x would give
// 0755), one entry per path.
func (t *v2to3) directories(in []v2types.Directory) ([]v3types.Directory, *Error) {
	var entries []located[v3types.Directory]
	for _, d := range in {
		r := t.ref(listDirectories, d.Path)
		root, cerr := t.nodeRoot(d.Node, r)
		if cerr != nil {
			return nil, cerr
		}
		d3 := v3types.Directory{Node: v3Node(d.Node, under(root, d.Path)), DirectoryEmbedded1: v3types.DirectoryEmbedded1{Mode: ptr.To(ptr.Deref(d.Mode, 0))}}
		entries = append(entries, located[v3types.Directory]{d3, r})
	}
	return dedupe(t, entries, func(d v3types.Directory) string { return path.Clean(d.Path) }, "directory")
}

// links translates links. Ignition 2 resolved a hard link's target on the link's filesystem,
// 3.x in the root: the target moves with the filesystem; a symbolic link's is kept as written.
func (t *v2to3) links(in []v2types.Link) ([]v3types.Link, *Error) {
	var entries []located[v3types.Link]
	for _, l := range in {
		r := t.ref(listLinks, l.Path)
		root, cerr := t.nodeRoot(l.Node, r)
		if cerr != nil {
			return nil, cerr
		}
		target := l.Target
		if l.Hard {
			target = under(root, l.Target)
		}
		entries = append(entries, located[v3types.Link]{v3types.Link{
			Node:          v3Node(l.Node, under(root, l.Path)),
			LinkEmbedded1: v3types.LinkEmbedded1{Hard: optional.True(l.Hard), Target: &target},
		}, r})
	}
	return dedupe(t, entries, func(l v3types.Link) string { return path.Clean(l.Path) }, "link")
}

// disks translates disks and their partitions. A size or start in sectors (deprecated in 2.x,
// gone in 3.x) depends on the device's sector size, which is not known here.
func (t *v2to3) disks(in []v2types.Disk) ([]v3types.Disk, *Error) {
	var entries []located[v3types.Disk]
	for _, d := range in {
		r := t.ref(listDisks, d.Device)
		d3 := v3types.Disk{Device: d.Device, WipeTable: optional.True(d.WipeTable)}
		for i, p := range d.Partitions {
			if p.Size != nil || p.Start != nil {
				return nil, t.fail(r, []any{"partitions", i}, "partition %d of %s gives its size or start in sectors, which Ignition 3 "+
					"does not take: give them in MiB", i, d.Device)
			}
			d3.Partitions = append(d3.Partitions, v3types.Partition{
				Label:              optional.Copy(p.Label),
				Number:             p.Number,
				SizeMiB:            optional.Copy(p.SizeMiB),
				StartMiB:           optional.Copy(p.StartMiB),
				TypeGUID:           optional.String(p.TypeGUID),
				GUID:               optional.String(p.GUID),
				WipePartitionEntry: optional.True(p.WipePartitionEntry),
				ShouldExist:        optional.Copy(p.ShouldExist),
			})
		}
		entries = append(entries, located[v3types.Disk]{d3, r})
	}
	return dedupe(t, entries, func(d v3types.Disk) string { return d.Device }, "disk")
}

// raid translates RAID arrays.
func (t *v2to3) raid(in []v2types.Raid) ([]v3types.Raid, *Error) {
	var entries []located[v3types.Raid]
	for _, a := range in {
		r3 := v3types.Raid{Name: a.Name, Level: optional.String(a.Level)}
		if a.Spares != 0 {
			r3.Spares = ptr.To(a.Spares)
		}
		for _, d := range a.Devices {
			r3.Devices = append(r3.Devices, v3types.Device(d))
		}
		for _, o := range a.Options {
			r3.Options = append(r3.Options, v3types.RaidOption(o))
		}
		entries = append(entries, located[v3types.Raid]{r3, t.ref(listRaid, a.Name)})
	}
	return dedupe(t, entries, func(a v3types.Raid) string { return a.Name }, "RAID array")
}
