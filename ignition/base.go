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
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	types "github.com/coreos/ignition/v2/config/v3_0/types"
	"k8s.io/utils/ptr"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/escape"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/normalize"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/optional"
)

// The base config is built at spec 3.0.0, the oldest 3.x spec: every target version's parser
// translates it up, so one set of types serves all of them.
const baseSpecVersion = "3.0.0"

// pinnedSpecVersion is the base's spec when a download is pinned to a SHA-256: the first spec
// whose verification.hash takes one (kubernetesInstall.specVersion).
const pinnedSpecVersion = "3.1.0"

// Default modes: kubeadm.yml holds the bootstrap token, kubeadm.sh is run by the unit.
const (
	kubeadmConfigMode = 0o600
	kubeadmScriptMode = 0o700
	defaultFileMode   = normalize.DefaultFileMode
)

// baseConfig is the provider's part of the config: kubeadm's configuration and script, the
// unit that runs the script, the provider's other files (certificates, the discovery
// kubeconfig) and the user's files. Every file has an explicit mode and overwrite, and data URL
// contents, gzipped only where compress allows it and that is shorter: CAPD's Ignition reader
// needs the mode, does not decompress and does not understand append (docs/adr/010, 011).
func baseConfig(version, kubeadmYAML, script, unit string, provider []ownedFile, inst *kubernetesInstall, files []File, users []User, compress bool) types.Config {
	cfg := types.Config{Ignition: types.Ignition{Version: version}}
	add := func(f File) {
		cfg.Storage.Files = append(cfg.Storage.Files, ignitionFile(f, compress))
	}
	add(File{Path: KubeadmConfigPath, Content: []byte(kubeadmYAML), Mode: kubeadmConfigMode})
	add(File{Path: KubeadmScriptPath, Content: []byte(script), Mode: kubeadmScriptMode})
	for _, f := range provider {
		add(f.File)
	}
	for _, f := range inst.remote {
		contents := types.FileContents{Source: ptr.To(f.source)}
		if f.sha256 != "" {
			contents.Verification.Hash = ptr.To(verificationHash(f.sha256))
		}
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node:          types.Node{Path: f.path, Overwrite: ptr.To(true)},
			FileEmbedded1: types.FileEmbedded1{Mode: ptr.To(f.mode), Contents: contents},
		})
	}
	for _, f := range files {
		add(f)
	}
	cfg.Storage.Links = append(cfg.Storage.Links, inst.links...)
	cfg.Systemd.Units = []types.Unit{{
		Name:     KubeadmUnitName,
		Enabled:  ptr.To(true),
		Contents: ptr.To(unit),
	}}
	cfg.Systemd.Units = append(cfg.Systemd.Units, inst.units...)
	for _, u := range users {
		cfg.Passwd.Users = append(cfg.Passwd.Users, passwdUser(u))
	}
	return cfg
}

// passwdUser converts a User; empty fields stay unset so the OS's defaults apply.
func passwdUser(u User) types.PasswdUser {
	user := types.PasswdUser{
		Name:         u.Name,
		Gecos:        optional.String(u.Gecos),
		HomeDir:      optional.String(u.HomeDir),
		Shell:        optional.String(u.Shell),
		PrimaryGroup: optional.String(u.PrimaryGroup),
		PasswordHash: optional.String(u.PasswordHash),
	}
	for _, g := range u.Groups {
		user.Groups = append(user.Groups, types.Group(g))
	}
	for _, k := range u.SSHAuthorizedKeys {
		user.SSHAuthorizedKeys = append(user.SSHAuthorizedKeys, types.SSHAuthorizedKey(k))
	}
	return user
}

// ignitionFile converts a File whose path, mode and owner checkFiles has accepted.
func ignitionFile(f File, compress bool) types.File {
	mode := f.Mode
	if mode == 0 {
		mode = defaultFileMode
	}
	user, group, _ := parseOwner(f.Owner)
	file := types.File{
		Node: types.Node{
			Path:      f.Path,
			Overwrite: ptr.To(true),
			User:      user,
			Group:     group,
		},
		FileEmbedded1: types.FileEmbedded1{Mode: ptr.To(mode)},
	}
	if f.Append {
		// Appending keeps what the image has: no overwrite, the content as an append entry.
		file.Overwrite = nil
		file.Append = []types.FileContents{fileContents(f.Content, compress)}
		return file
	}
	file.Contents = fileContents(f.Content, compress)
	return file
}

// compressionField is what naming gzip costs in a file's contents.
const compressionField = `,"compression":"gzip"`

// fileContents encodes content the shortest of three ways, as Butane does: percent-escaped
// text keeps scripts readable in the output, base64 keeps binary data small, and, where
// compress allows it, gzip shrinks larger text (kubeadm's configuration, certificates, scripts)
// at the price of naming the compression. Every form is a data URL Ignition decodes; only the
// first two are read by CAPD, which does not decompress (docs/adr/011). None of the forms has a
// character JSON escapes, so their lengths are what they cost in the output.
func fileContents(content []byte, compress bool) types.FileContents {
	source := escape.DataURL(content)
	if b64 := "data:;base64," + base64.StdEncoding.EncodeToString(content); len(b64) < len(source) {
		source = b64
	}
	if compress {
		gz := "data:;base64," + base64.StdEncoding.EncodeToString(gzipBytes(content))
		if len(gz)+len(compressionField) < len(source) {
			return types.FileContents{Source: &gz, Compression: ptr.To(compressionGzip)}
		}
	}
	return types.FileContents{Source: &source}
}

// parseOwner reads "user:group", "user" or "" (root). Numeric names are IDs.
func parseOwner(owner string) (types.NodeUser, types.NodeGroup, error) {
	if owner == "" {
		return types.NodeUser{}, types.NodeGroup{}, nil
	}
	userName, groupName, hasGroup := strings.Cut(owner, ":")
	if userName == "" || (hasGroup && groupName == "") || strings.Contains(groupName, ":") {
		return types.NodeUser{}, types.NodeGroup{}, fmt.Errorf("%q is not user, user:group or empty", owner)
	}
	for _, name := range []string{userName, groupName} {
		if strings.ContainsAny(name, " \t\n/") {
			return types.NodeUser{}, types.NodeGroup{}, errors.New("user and group names must not contain spaces or slashes")
		}
	}
	var user types.NodeUser
	user.ID, user.Name = idOrName(userName)
	var group types.NodeGroup
	if hasGroup {
		group.ID, group.Name = idOrName(groupName)
	}
	return user, group, nil
}

// idOrName reads a user or group: digits are an ID, anything else a name.
func idOrName(s string) (*int, *string) {
	if strings.Trim(s, "0123456789") == "" {
		if id, err := strconv.Atoi(s); err == nil {
			return &id, nil
		}
	}
	return nil, &s
}
