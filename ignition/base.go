package ignition

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	types "github.com/coreos/ignition/v2/config/v3_0/types"
	"github.com/vincent-petithory/dataurl"
)

// The base config is built at spec 3.0.0, the oldest 3.x spec: every target version's parser
// translates it up, so one set of types serves all of them.
const baseSpecVersion = "3.0.0"

// Default modes: kubeadm.yml holds the bootstrap token, kubeadm.sh is run by the unit.
const (
	kubeadmConfigMode = 0o600
	kubeadmScriptMode = 0o700
	defaultFileMode   = 0o644
)

// baseConfig is the provider's part of the config: kubeadm's configuration and script, the
// unit that runs the script, the provider's other files (certificates, the discovery
// kubeconfig) and the user's files. Every file has an explicit mode
// and overwrite, and uncompressed data URL contents: CAPD's Ignition reader needs the mode,
// ignores compression and does not understand append.
func baseConfig(kubeadmYAML, script, unit string, provider []ownedFile, files []File) types.Config {
	cfg := types.Config{Ignition: types.Ignition{Version: baseSpecVersion}}
	add := func(f File) {
		cfg.Storage.Files = append(cfg.Storage.Files, ignitionFile(f))
	}
	add(File{Path: KubeadmConfigPath, Content: []byte(kubeadmYAML), Mode: kubeadmConfigMode})
	add(File{Path: KubeadmScriptPath, Content: []byte(script), Mode: kubeadmScriptMode})
	for _, f := range provider {
		add(f.File)
	}
	for _, f := range files {
		add(f)
	}
	cfg.Systemd.Units = []types.Unit{{
		Name:     KubeadmUnitName,
		Enabled:  ptr(true),
		Contents: ptr(unit),
	}}
	return cfg
}

// ignitionFile converts a File whose path, mode and owner checkFiles has accepted.
func ignitionFile(f File) types.File {
	mode := f.Mode
	if mode == 0 {
		mode = defaultFileMode
	}
	user, group, _ := parseOwner(f.Owner)
	return types.File{
		Node: types.Node{
			Path:      f.Path,
			Overwrite: ptr(true),
			User:      user,
			Group:     group,
		},
		FileEmbedded1: types.FileEmbedded1{
			Mode:     ptr(mode),
			Contents: types.FileContents{Source: ptr(dataURL(f.Content))},
		},
	}
}

// dataURL encodes content the shorter of two ways, as Butane does: percent-escaped text keeps
// scripts and YAML readable in the output, base64 keeps binary data small. Both are plain
// data URLs that Ignition and CAPD decode.
func dataURL(content []byte) string {
	escaped := "data:," + dataurl.Escape(content)
	b64 := "data:;base64," + base64.StdEncoding.EncodeToString(content)
	if len(escaped) <= len(b64) {
		return escaped
	}
	return b64
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

func ptr[T any](v T) *T { return &v }
