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
	"bytes"
	"fmt"
	"strconv"
	"strings"

	butanebase "github.com/coreos/butane/base/v0_4"
	butaneflatcar "github.com/coreos/butane/config/flatcar/v1_0"
	"github.com/coreos/go-systemd/v22/unit"
	clctypes "github.com/flatcar/container-linux-config-transpiler/config/types"
	"gopkg.in/yaml.v3"
	"k8s.io/utils/ptr"
)

// butaneVersion is the Butane flatcar version the document is written in: 1.0.0 (Ignition
// 3.3.0, Flatcar's floor) has everything the conversion writes.
const butaneVersion = "1.0.0"

// butane is the provisioning as a Butane document.
func (p *provisioning) butane() (string, error) {
	cfg := butaneflatcar.Config{Config: butanebase.Config{
		Variant: "flatcar",
		Version: butaneVersion,
		Storage: butanebase.Storage{Disks: p.disks, Filesystems: p.filesystems, Files: p.files},
		Systemd: butanebase.Systemd{Units: p.units},
	}}
	return marshalPruned(cfg)
}

// clc is the provisioning as a Container Linux Config. CLC has no with_mount_unit: the mount
// units Butane would generate are written out, in the form Butane gives them.
func (p *provisioning) clc() (clctypes.Config, error) {
	var cfg clctypes.Config
	for _, d := range p.disks {
		disk := clctypes.Disk{Device: d.Device, WipeTable: ptr.Deref(d.WipeTable, false)}
		for _, part := range d.Partitions {
			disk.Partitions = append(disk.Partitions, clctypes.Partition{Number: part.Number, TypeGUID: ptr.Deref(part.TypeGUID, "")})
		}
		cfg.Storage.Disks = append(cfg.Storage.Disks, disk)
	}
	for i, fs := range p.filesystems {
		name := fmt.Sprintf("cluster-api-%d", i)
		if fs.Label != nil {
			name = "cluster-api-" + *fs.Label
		}
		cfg.Storage.Filesystems = append(cfg.Storage.Filesystems, clctypes.Filesystem{Name: name, Mount: &clctypes.Mount{
			Device:         fs.Device,
			Format:         ptr.Deref(fs.Format, ""),
			WipeFilesystem: ptr.Deref(fs.WipeFilesystem, false),
			Label:          fs.Label,
			Options:        fs.Options,
		}})
		if fs.Path == nil {
			continue
		}
		contents, err := mountUnit(fs)
		if err != nil {
			return cfg, err
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, clctypes.SystemdUnit{
			Name:     unit.UnitNamePathEscape(*fs.Path) + ".mount",
			Enabled:  ptr.To(true),
			Contents: contents,
		})
	}
	for _, f := range p.files {
		cfg.Storage.Files = append(cfg.Storage.Files, clctypes.File{
			Filesystem: "root",
			Path:       f.Path,
			Mode:       f.Mode,
			Contents:   clctypes.FileContents{Inline: ptr.Deref(f.Contents.Inline, "")},
		})
	}
	for _, u := range p.units {
		cfg.Systemd.Units = append(cfg.Systemd.Units, clctypes.SystemdUnit{Name: u.Name, Enabled: u.Enabled})
	}
	return cfg, nil
}

// mountUnit is the unit Butane's with_mount_unit generates for a local filesystem.
func mountUnit(fs butanebase.Filesystem) (string, error) {
	fsck := "systemd-fsck@" + unit.UnitNamePathEscape(fs.Device) + ".service"
	opts := []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Requires", fsck),
		unit.NewUnitOption("Unit", "After", fsck),
		unit.NewUnitOption("Mount", "Where", *fs.Path),
		unit.NewUnitOption("Mount", "What", fs.Device),
		unit.NewUnitOption("Mount", "Type", ptr.Deref(fs.Format, "")),
	}
	if len(fs.MountOptions) > 0 {
		opts = append(opts, unit.NewUnitOption("Mount", "Options", strings.Join(fs.MountOptions, ",")))
	}
	opts = append(opts, unit.NewUnitOption("Install", "RequiredBy", "local-fs.target"))
	return serializeUnit(opts)
}

// mergeIntoCLC adds the provisioning to the user's Container Linux Config: lists are extended,
// maps merged, the user's document otherwise kept (comments included).
func mergeIntoCLC(doc string, p *provisioning) (string, error) {
	if p.empty() {
		return doc, nil
	}
	var user yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &user); err != nil {
		return "", fmt.Errorf("the Container Linux Config is not YAML (%v)", err)
	}
	cfg, err := p.clc()
	if err != nil {
		return "", err
	}
	var gen yaml.Node
	if err := gen.Encode(cfg); err != nil {
		return "", fmt.Errorf("writing Container Linux Config: %w", err)
	}
	// The transpiler's types have plain bools and ints: their zero values mean unset.
	prune(&gen, true)
	octalModes(&gen)
	root := &user
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == 0 || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		user = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	}
	if err := mergeNodes(root, &gen, ""); err != nil {
		return "", err
	}
	return encodeYAML(&user)
}

// mergeNodes merges add into into: a key only in add is appended, mappings are merged and
// sequences appended to.
func mergeNodes(into, add *yaml.Node, path string) error {
	switch {
	case into.Kind == yaml.MappingNode && add.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(add.Content); i += 2 {
			key, val := add.Content[i], add.Content[i+1]
			existing := mappingValue(into, key.Value)
			if existing == nil {
				into.Content = append(into.Content, key, val)
				continue
			}
			if err := mergeNodes(existing, val, path+"."+key.Value); err != nil {
				return err
			}
		}
		return nil
	case into.Kind == yaml.SequenceNode && add.Kind == yaml.SequenceNode:
		into.Content = append(into.Content, add.Content...)
		return nil
	case into.Kind == yaml.ScalarNode && into.Tag == "!!null":
		*into = *add
		return nil
	}
	return fmt.Errorf("the Container Linux Config has %s in a form the generated settings cannot be added to", strings.TrimPrefix(path, "."))
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// marshalPruned writes v as YAML without the null and empty values Butane's and the
// transpiler's types (which have no omitempty) would otherwise spell out.
func marshalPruned(v any) (string, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	prune(&n, false)
	octalModes(&n)
	return encodeYAML(&n)
}

func encodeYAML(n *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	return b.String(), nil
}

// prune removes null values and empty strings (and with zeros, false and 0) from mappings, and
// the mappings and sequences left empty; it reports whether n itself is now empty.
func prune(n *yaml.Node, zeros bool) bool {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			prune(c, zeros)
		}
		return false
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !prune(n.Content[i+1], zeros) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return len(n.Content) == 0
	case yaml.SequenceNode:
		for _, c := range n.Content {
			prune(c, zeros)
		}
		return len(n.Content) == 0
	case yaml.ScalarNode:
		switch {
		case n.Tag == "!!null", n.Tag == "!!str" && n.Value == "":
			return true
		case zeros && (n.Tag == "!!bool" && n.Value == "false" || n.Tag == "!!int" && n.Value == "0"):
			return true
		}
	}
	return false
}

// octalModes writes file modes in octal (0644), as people read and write them; YAML reads a
// leading 0 as octal, as Butane and the transpiler do.
func octalModes(n *yaml.Node) {
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Value == "mode" && c.Tag == "!!int" {
			if mode, err := strconv.ParseInt(c.Value, 10, 32); err == nil {
				c.Value = fmt.Sprintf("%#o", mode)
			}
			continue
		}
		octalModes(c)
	}
}
