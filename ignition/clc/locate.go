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
	"gopkg.in/yaml.v3"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// docList is a list of a Container Linux Config and the member that names its entries: where an
// entry of the transpiled Ignition 2.3 config was written is found by that name, because the
// transpiler keeps no positions in its output and adds entries of its own.
type docList struct {
	path []string
	// key is the member naming an entry; "" for a single entry (ignition.config.replace).
	key string
}

var (
	listFiles         = docList{path: []string{"storage", "files"}, key: "path"}
	listDirectories   = docList{path: []string{"storage", "directories"}, key: "path"}
	listLinks         = docList{path: []string{"storage", "links"}, key: "path"}
	listFilesystems   = docList{path: []string{"storage", "filesystems"}, key: "name"}
	listDisks         = docList{path: []string{"storage", "disks"}, key: "device"}
	listRaid          = docList{path: []string{"storage", "raid"}, key: "name"}
	listUnits         = docList{path: []string{"systemd", "units"}, key: "name"}
	listNetworkd      = docList{path: []string{"networkd", "units"}, key: "name"}
	listUsers         = docList{path: []string{"passwd", "users"}, key: "name"}
	listGroups        = docList{path: []string{"passwd", "groups"}, key: "name"}
	listConfigAppend  = docList{path: []string{"ignition", "config", "append"}, key: "source"}
	listConfigReplace = docList{path: []string{"ignition", "config", "replace"}}
	listCAs           = docList{path: []string{"ignition", "security", "tls", "certificate_authorities"}, key: "source"}
)

// generated is what the transpiler makes of a section of a Container Linux Config: entries
// named like those of a list, which are located at the section.
type generated struct {
	sections []string
	// first: the transpiler emits it before the list's own entries (units of the docker:,
	// etcd: and flannel: sections), else after them (update.conf of update: and locksmith:).
	first bool
}

// generatedEntries are the transpiler's generated entries by name.
var generatedEntries = map[string]generated{
	"docker.service":          {sections: []string{"docker"}, first: true},
	"etcd-member.service":     {sections: []string{"etcd"}, first: true},
	"flanneld.service":        {sections: []string{"flannel"}, first: true},
	"/etc/coreos/update.conf": {sections: []string{"update", "locksmith"}},
}

// entryRef names one entry of a list: the nth (0-based) whose key member is value.
type entryRef struct {
	list  docList
	value string
	nth   int
}

// locator finds entries in the YAML of a Container Linux Config. The zero locator finds
// nothing (every position unknown).
type locator struct{ root *yaml.Node }

// newLocator reads doc, which the transpiler has parsed already; a document it cannot read
// gives the zero locator.
func newLocator(doc string) locator {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil || len(root.Content) != 1 {
		return locator{}
	}
	return locator{root: root.Content[0]}
}

// at is the position of the entry, or of sub inside it (mapping keys and sequence indexes) as
// far as sub is found; for an entry the transpiler generated, the section it came from.
func (l locator) at(r entryRef, sub ...any) docpos.Position {
	if l.root == nil {
		return docpos.Position{}
	}
	if g, ok := generatedEntries[r.value]; ok {
		if section := l.section(g); section != nil {
			if g.first && r.nth == 0 {
				return docpos.Position{Line: section.Line, Column: section.Column}
			}
			if g.first {
				r.nth-- // the list's own entries come after the generated one
			}
			if l.find(r) == nil {
				return docpos.Position{Line: section.Line, Column: section.Column}
			}
		}
	}
	n := l.find(r)
	if n == nil {
		return docpos.Position{}
	}
	return descend(n, sub)
}

// section is the key of the first of g's sections in the document, nil when there is none.
func (l locator) section(g generated) *yaml.Node {
	for _, name := range g.sections {
		if key, _ := entryOf(l.root, name); key != nil {
			return key
		}
	}
	return nil
}

// path is the position of what keys (mapping keys and sequence indexes) lead to from the top of
// the document, as far as they are found.
func (l locator) path(keys ...any) docpos.Position {
	if l.root == nil {
		return docpos.Position{}
	}
	return descend(l.root, keys)
}

// descend is the position of what keys lead to from n, as far as they are found: of the key
// for a mapping key (the value of "create:" is the mapping below it), of the item for an index.
func descend(n *yaml.Node, keys []any) docpos.Position {
	at := docpos.Position{Line: n.Line, Column: n.Column}
	for _, k := range keys {
		key, value := entryOf(n, k)
		if value == nil {
			break
		}
		at, n = docpos.Position{Line: key.Line, Column: key.Column}, value
	}
	return at
}

// find returns the node of the entry, nil when it is not in the document.
func (l locator) find(r entryRef) *yaml.Node {
	n := l.root
	for _, k := range r.list.path {
		if n = child(n, k); n == nil {
			return nil
		}
	}
	if r.list.key == "" {
		return n
	}
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	seen := 0
	for _, item := range n.Content {
		item = resolve(item)
		if v := child(item, r.list.key); v != nil && v.Kind == yaml.ScalarNode && v.Value == r.value {
			if seen == r.nth {
				return item
			}
			seen++
		}
	}
	return nil
}

// child is the value of key k (a string) of a mapping or item k (an int) of a sequence, nil when
// there is none.
func child(n *yaml.Node, k any) *yaml.Node {
	_, value := entryOf(n, k)
	return value
}

// entryOf is the key node and the value of key k (a string) of a mapping, or item k (an int) of
// a sequence as both; nils when there is none.
func entryOf(n *yaml.Node, k any) (key, value *yaml.Node) {
	n = resolve(n)
	if n == nil {
		return nil, nil
	}
	switch k := k.(type) {
	case string:
		if n.Kind != yaml.MappingNode {
			return nil, nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i], resolve(n.Content[i+1])
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
			item := resolve(n.Content[k])
			return item, item
		}
	}
	return nil, nil
}

// firstAlias is the position of the first YAML alias of the document, zero for none.
func (l locator) firstAlias() docpos.Position {
	var walk func(n *yaml.Node) *yaml.Node
	walk = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if n.Kind == yaml.AliasNode {
			return n
		}
		for _, c := range n.Content {
			if a := walk(c); a != nil {
				return a
			}
		}
		return nil
	}
	if a := walk(l.root); a != nil {
		return docpos.Position{Line: a.Line, Column: a.Column}
	}
	return docpos.Position{}
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}
