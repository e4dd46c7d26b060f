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

package nodeupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// disk changes the node's files so that a power cut leaves each either as it was or as it
// became, never truncated: a file is written beside its path, synced, renamed into place, and
// its directory synced; a removal or a link is followed by its directory's sync. Paths are the
// node's (absolute); root prefixes them (empty on the node, a temporary directory in tests).
type disk struct {
	root string
	// synced, when set, is told every path synced, in order (the tests' record).
	synced func(nodePath string)
}

func (d disk) path(p string) string { return filepath.Join(d.root, filepath.FromSlash(p)) }

// sync flushes the file or directory at p to the disk.
func (d disk) sync(p string) error {
	f, err := os.Open(d.path(p))
	if err != nil {
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	if d.synced != nil {
		d.synced(p)
	}
	return nil
}

func (d disk) exists(p string) bool {
	_, err := os.Lstat(d.path(p))
	return err == nil
}

func (d disk) readFile(p string) ([]byte, error) { return os.ReadFile(d.path(p)) }

// mkdirAll makes the directory p and its missing parents, each synced into its parent.
func (d disk) mkdirAll(p string, mode fs.FileMode) error {
	if d.exists(p) {
		return nil
	}
	if parent := path.Dir(p); parent != p {
		if err := d.mkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(d.path(p), mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return d.sync(path.Dir(p))
}

// writeFrom writes what r holds to p with mode, durably (see disk).
func (d disk) writeFrom(p string, r io.Reader, mode fs.FileMode) error {
	dir := path.Dir(p)
	if err := d.mkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.path(dir), "."+path.Base(p)+".cabpi-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone once renamed
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if d.synced != nil {
		d.synced(p)
	}
	if err := os.Rename(tmp, d.path(p)); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return d.sync(dir)
}

func (d disk) writeFile(p string, data []byte, mode fs.FileMode) error {
	return d.writeFrom(p, bytes.NewReader(data), mode)
}

// copyFile copies the file at from to to with mode, durably.
func (d disk) copyFile(from, to string, mode fs.FileMode) error {
	f, err := os.Open(d.path(from))
	if err != nil {
		return fmt.Errorf("copying %s: %w", from, err)
	}
	defer f.Close()
	return d.writeFrom(to, f, mode)
}

// rename moves from to to (both synced files or directories) and syncs their directories.
func (d disk) rename(from, to string) error {
	if err := os.Rename(d.path(from), d.path(to)); err != nil {
		return fmt.Errorf("renaming %s: %w", from, err)
	}
	if err := d.sync(path.Dir(to)); err != nil {
		return err
	}
	if path.Dir(from) != path.Dir(to) {
		return d.sync(path.Dir(from))
	}
	return nil
}

// link points the link p at target, replacing what p was, durably.
func (d disk) link(target, p string) error {
	dir := path.Dir(p)
	if err := d.mkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := p + ".cabpi-new"
	_ = os.Remove(d.path(tmp))
	if err := os.Symlink(target, d.path(tmp)); err != nil {
		return fmt.Errorf("linking %s: %w", p, err)
	}
	if err := os.Rename(d.path(tmp), d.path(p)); err != nil {
		return fmt.Errorf("linking %s: %w", p, err)
	}
	return d.sync(dir)
}

// readLink is where the link p points ("" and an error when p is no link).
func (d disk) readLink(p string) (string, error) { return os.Readlink(d.path(p)) }

// remove removes p (a file, link or whole directory) and syncs its directory; a p that is not
// there is removed already.
func (d disk) remove(p string) error {
	if !d.exists(p) {
		return nil
	}
	if err := os.RemoveAll(d.path(p)); err != nil {
		return fmt.Errorf("removing %s: %w", p, err)
	}
	return d.sync(path.Dir(p))
}
