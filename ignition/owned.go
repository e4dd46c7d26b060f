package ignition

import (
	"fmt"
	"path"
	"strings"
)

// Where Ignition writes a unit; a file, link or directory there would replace or extend the
// provider's unit behind Ignition's unit handling.
const (
	kubeadmUnitPath      = "/etc/systemd/system/" + KubeadmUnitName
	kubeadmUnitDropinDir = kubeadmUnitPath + ".d"
)

// ownedPaths are the paths the provider writes or relies on for every node. Certificate paths
// are owned too, but only Render knows them.
var ownedPaths = []string{KubeadmConfigPath, KubeadmScriptPath, SentinelPath, kubeadmUnitPath, kubeadmUnitDropinDir}

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
		if p == o || isBelow(p, o) || (kind != nodeDirectory && isBelow(o, p)) {
			return o
		}
	}
	return ""
}

// isBelow reports whether p is strictly inside directory dir; both are clean and absolute.
func isBelow(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// checkSnippet rejects a snippet that writes an owned path or unit (certificates are the extra
// owned paths Render knows), or that replaces the whole config, which would drop the bootstrap.
func checkSnippet(s *snippet, certificatePaths []string) *Error {
	owned := append(append([]string(nil), ownedPaths...), certificatePaths...)
	storage := s.config.Storage
	type node struct {
		path string
		kind nodeKind
	}
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
	for _, n := range nodes {
		if o := ownedConflict(n.path, n.kind, owned); o != "" {
			return errorf(ErrOwnedPathConflict, butaneField,
				"the Butane snippet writes a %s at %s, which conflicts with %s written by the provider", n.kind, n.path, o)
		}
	}
	for _, u := range s.config.Systemd.Units {
		if u.Name == KubeadmUnitName {
			what := "defines"
			if len(u.Dropins) > 0 {
				what = "adds drop-ins to"
			}
			return errorf(ErrOwnedPathConflict, butaneField,
				"the Butane snippet %s unit %s, which the provider owns", what, KubeadmUnitName)
		}
	}
	if replace := s.config.Ignition.Config.Replace.Source; replace != nil && *replace != "" {
		return errorf(ErrInvalidButane, butaneField,
			"the Butane snippet sets ignition.config.replace, which would discard the bootstrap configuration")
	}
	return nil
}

// checkFiles validates the user's files and the certificates: absolute paths, no path twice,
// sane modes and owners, and no user file at a path the provider owns.
func checkFiles(certificates, files []File) *Error {
	seen := map[string]string{}
	check := func(field string, f File, owned []string) *Error {
		if !path.IsAbs(f.Path) {
			return errorf(ErrInvalidInput, field, "path %q is not absolute", f.Path)
		}
		clean := path.Clean(f.Path)
		if clean == "/" {
			return errorf(ErrInvalidInput, field, "path %q is the root directory", f.Path)
		}
		if o := ownedConflict(clean, nodeFile, owned); o != "" {
			return errorf(ErrOwnedPathConflict, field, "path %s conflicts with %s written by the provider", f.Path, o)
		}
		if other, dup := seen[clean]; dup {
			return errorf(ErrInvalidInput, field, "path %s is also written by %s", f.Path, other)
		}
		seen[clean] = field
		if f.Mode < 0 || f.Mode > 0o7777 {
			return errorf(ErrInvalidInput, field, "mode %#o is not a file mode (0 to 07777)", f.Mode)
		}
		if _, _, err := parseOwner(f.Owner); err != nil {
			return errorf(ErrInvalidInput, field, "owner: %v", err)
		}
		return nil
	}
	for i, c := range certificates {
		if err := check(fmt.Sprintf("certificates[%d]", i), c, ownedPaths); err != nil {
			return err
		}
	}
	owned := append(append([]string(nil), ownedPaths...), paths(certificates)...)
	for i, f := range files {
		if err := check(fmt.Sprintf("files[%d]", i), f, owned); err != nil {
			return err
		}
	}
	return nil
}

// checkSnippetAgainstFiles rejects a snippet writing the same path as one of the user's files:
// Ignition would merge the two entries field by field, and neither would win cleanly.
func checkSnippetAgainstFiles(s *snippet, files []File) *Error {
	for _, f := range s.config.Storage.Files {
		for i, uf := range files {
			if path.Clean(f.Path) == path.Clean(uf.Path) {
				return errorf(ErrInvalidInput, butaneField, "the Butane snippet writes %s, which files[%d] writes too", f.Path, i)
			}
		}
	}
	return nil
}

func paths(files []File) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, path.Clean(f.Path))
	}
	return out
}
