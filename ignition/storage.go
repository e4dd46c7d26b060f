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
	"encoding/json"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// shellMetacharacters may not appear in a path of the rendered config. CAPD, one consumer of
// the output, writes each file with `sh -c "cat > PATH /dev/stdin"`, PATH unquoted: any of
// these, whitespace or a control character would run or redirect something else.
const shellMetacharacters = ";&|$`'\"<>\\"

// origins names who writes each path of the base config, for errors found in the merged config,
// where the origin of an entry is no longer recorded. Any path not in paths comes from the
// snippet, whose source is snippet.
type origins struct {
	paths   map[string]writer
	snippet snippetSource
}

// writer is who writes a path of the base config.
type writer struct {
	// provider: one of the provider's fixed files, which no part of the input is at fault for.
	provider bool
	// at is the place at fault for a problem with the path: a provider file's entry
	// (certificates[i], ...), a user file's path (files[i].path), the snippet.
	at Place
	// entry names the writer in a message: the user's file rather than its path.
	entry Place
}

func baseOrigins(provider []ownedFile, providerPaths []string, files []File, snippet snippetSource) origins {
	o := origins{paths: map[string]writer{KubeadmConfigPath: {provider: true}, KubeadmScriptPath: {provider: true}}, snippet: snippet}
	for _, p := range providerPaths {
		o.paths[path.Clean(p)] = writer{provider: true}
	}
	for _, p := range provider {
		o.paths[path.Clean(p.Path)] = writer{at: p.place, entry: p.place}
	}
	for i, f := range files {
		o.paths[path.Clean(f.Path)] = writer{at: Entry(PartFile, i, FilePath), entry: Entry(PartFile, i)}
	}
	return o
}

// writer is who writes p.
func (o origins) writer(p string) writer {
	if w, ok := o.paths[path.Clean(p)]; ok {
		return w
	}
	return writer{at: o.snippet.place(), entry: o.snippet.place()}
}

// bySnippet reports whether the snippet writes p.
func (o origins) bySnippet(p string) bool {
	w := o.writer(p)
	return !w.provider && w.at.Part == o.snippet.part
}

// describe names the writer of p for a message.
func (o origins) describe(p string) string {
	switch w := o.writer(p); {
	case w.provider:
		return "the provider"
	case o.bySnippet(p):
		return o.snippet.name
	default:
		return w.entry.String()
	}
}

// mergedStorage is what checkStorage reads of a merged config.
type mergedStorage struct {
	Storage struct {
		Files       []struct{ Path string } `json:"files"`
		Directories []struct{ Path string } `json:"directories"`
		Links       []struct{ Path string } `json:"links"`
	} `json:"storage"`
}

// checkStorage rejects a merged config that Ignition accepts but fails on at boot, or that
// CAPD would write wrongly:
//   - an entry inside a file or a link ("/opt/a/b" with a file at "/opt/a"): Ignition cannot
//     create the directory, or finds that another entry already resolves there;
//   - a path written as two kinds of entry (merging keeps one entry per path, so this guards
//     the merge rather than the input);
//   - a path with whitespace, a control character or a shell metacharacter.
//
// The entry a user can change is blamed: the snippet's if one of the two entries is the
// snippet's, else the inner entry's. Every problem found is returned.
func checkStorage(data []byte, o origins) []*Error {
	var cfg mergedStorage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return []*Error{errorf(ErrInvalidInput, Place{}, "cannot read the merged config: %v", err)}
	}
	var errs []*Error
	var nodes []node
	for _, f := range cfg.Storage.Files {
		nodes = append(nodes, node{f.Path, nodeFile})
	}
	for _, d := range cfg.Storage.Directories {
		nodes = append(nodes, node{d.Path, nodeDirectory})
	}
	for _, l := range cfg.Storage.Links {
		nodes = append(nodes, node{l.Path, nodeLink})
	}

	kinds := map[string]nodeKind{}
	for _, n := range nodes {
		if r, found := unsafePathRune(n.path); found {
			errs = append(errs, errorf(ErrInvalidInput, o.writer(n.path).at,
				"%s path %q contains %s: paths must not contain whitespace, control characters or any of %s, "+
					"because consumers of the config write files through a shell", n.kind, n.path, strconv.QuoteRune(r), shellMetacharacters))
		}
		clean := path.Clean(n.path)
		if kind, dup := kinds[clean]; dup && kind != n.kind {
			errs = append(errs, errorf(ErrInvalidInput, o.writer(n.path).at, "path %s is written both as a %s and as a %s", n.path, kind, n.kind))
		}
		kinds[clean] = n.kind
	}
	for _, n := range nodes {
		for dir := path.Dir(path.Clean(n.path)); dir != "/" && dir != "."; dir = path.Dir(dir) {
			kind, ok := kinds[dir]
			if !ok || kind == nodeDirectory {
				continue
			}
			at := o.writer(n.path).at
			if o.bySnippet(dir) {
				at = o.snippet.place()
			}
			errs = append(errs, errorf(ErrInvalidInput, at,
				"%s %s (written by %s) is inside %s, a %s written by %s: Ignition cannot create it at boot",
				n.kind, n.path, o.describe(n.path), dir, kind, o.describe(dir)))
			break
		}
	}
	return errs
}

// unsafePathRune returns the first rune of p that may not appear in a path of the config.
func unsafePathRune(p string) (rune, bool) {
	for _, r := range p {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(shellMetacharacters, r) {
			return r, true
		}
	}
	return 0, false
}
