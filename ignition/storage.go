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
// where the origin of an entry is no longer recorded: "" for the provider's fixed files, the
// field of its other files ("certificates[i]", ...), "files[i].path". Any other path comes from the
// snippet, whose source is snippet.
type origins struct {
	paths   map[string]string
	snippet snippetSource
}

func baseOrigins(provider []ownedFile, files []File, snippet snippetSource) origins {
	o := origins{paths: map[string]string{KubeadmConfigPath: "", KubeadmScriptPath: ""}, snippet: snippet}
	for _, p := range provider {
		o.paths[path.Clean(p.Path)] = p.field
	}
	for i, f := range files {
		o.paths[path.Clean(f.Path)] = userFileField(i)("path")
	}
	return o
}

// field is the input field that writes p.
func (o origins) field(p string) string {
	if f, ok := o.paths[path.Clean(p)]; ok {
		return f
	}
	return o.snippet.field
}

// describe names the writer of p for a message.
func (o origins) describe(p string) string {
	switch f := o.field(p); f {
	case "":
		return "the provider"
	case o.snippet.field:
		return o.snippet.name
	default:
		return strings.TrimSuffix(f, ".path") // the entry, not its field
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
// snippet's, else the inner entry's.
func checkStorage(data []byte, o origins) *Error {
	var cfg mergedStorage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return errorf(ErrInvalidInput, "", "cannot read the merged config: %v", err)
	}
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
			return errorf(ErrInvalidInput, o.field(n.path),
				"%s path %q contains %s: paths must not contain whitespace, control characters or any of %s, "+
					"because consumers of the config write files through a shell", n.kind, n.path, strconv.QuoteRune(r), shellMetacharacters)
		}
		clean := path.Clean(n.path)
		if kind, dup := kinds[clean]; dup && kind != n.kind {
			return errorf(ErrInvalidInput, o.field(n.path), "path %s is written both as a %s and as a %s", n.path, kind, n.kind)
		}
		kinds[clean] = n.kind
	}
	for _, n := range nodes {
		for dir := path.Dir(path.Clean(n.path)); dir != "/" && dir != "."; dir = path.Dir(dir) {
			kind, ok := kinds[dir]
			if !ok || kind == nodeDirectory {
				continue
			}
			field := o.field(n.path)
			if o.field(dir) == o.snippet.field {
				field = o.snippet.field
			}
			return errorf(ErrInvalidInput, field,
				"%s %s (written by %s) is inside %s, a %s written by %s: Ignition cannot create it at boot",
				n.kind, n.path, o.describe(n.path), dir, kind, o.describe(dir))
		}
	}
	return nil
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
