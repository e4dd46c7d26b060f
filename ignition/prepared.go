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
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/normalize"
)

// Prepared is a join rendered with a stand-in for its bootstrap token, ready to take the real
// one. The controller renders with a placeholder first, so that a join token is created in the
// workload cluster only for input that renders; WithJoinToken then gives exactly the bytes
// Render would give with the real token, without rendering twice: only kubeadm's configuration
// depends on the token, so only that file is encoded again, in the already merged and validated
// config.
type Prepared struct {
	in     Input
	merged *merged
	out    Output
}

// Prepare renders in as Render does and keeps what WithJoinToken needs.
func Prepare(in Input) (*Prepared, error) {
	m, out, err := render(&in)
	if err != nil {
		return nil, err
	}
	return &Prepared{in: in, merged: m, out: out}, nil
}

// Output is the render of the input as given to Prepare.
func (p *Prepared) Output() Output { return p.out }

// WithJoinToken returns what Render gives for the prepared input with token as its join
// token (joinConfiguration.discovery.bootstrapToken.token). The token must have the form of
// the one it replaces (kubeadm's "[a-z0-9]{6}.[a-z0-9]{16}"), which keeps the validity and
// the size of the config as Prepare found them.
func (p *Prepared) WithJoinToken(token string) (Output, error) {
	in := p.in
	if in.JoinConfiguration == nil {
		return Output{}, fmt.Errorf("the prepared input is not a join")
	}
	join := in.JoinConfiguration.DeepCopy()
	if join.Discovery.BootstrapToken.Token == "" {
		return Output{}, fmt.Errorf("the prepared join has no bootstrap token to replace")
	}
	join.Discovery.BootstrapToken.Token = token
	in.JoinConfiguration = join
	kubeadmYAML, generated, errs := kubeadmConfig(&in, p.merged.kubeVersion, p.merged.metadata)
	if len(errs) > 0 {
		return Output{}, &Report{Errors: errs}
	}
	if !reflect.DeepEqual(generated, p.merged.generated) {
		// Nothing but kubeadm's configuration is expected to carry the token; should that ever
		// change, render whole rather than emit a config that differs from Render's.
		return Render(in)
	}

	var config map[string]any
	dec := json.NewDecoder(bytes.NewReader(p.merged.data))
	dec.UseNumber()
	if err := dec.Decode(&config); err != nil {
		return Output{}, fmt.Errorf("decoding the prepared config: %w", err)
	}
	entry, err := fileEntry(config, KubeadmConfigPath)
	if err != nil {
		return Output{}, err
	}
	// The entry as the base config writes it; owned paths are never merged with the snippet,
	// so it is the whole entry of the merged config.
	encoded, err := json.Marshal(ignitionFile(File{Path: KubeadmConfigPath, Content: []byte(kubeadmYAML), Mode: kubeadmConfigMode}, in.Compress))
	if err != nil {
		return Output{}, fmt.Errorf("encoding kubeadm's configuration: %w", err)
	}
	if err := replaceFileEntry(config, entry, encoded); err != nil {
		return Output{}, err
	}
	data, err := json.Marshal(config)
	if err != nil {
		return Output{}, fmt.Errorf("encoding the config: %w", err)
	}
	// The same pruning and key order as every rendered config.
	if data, err = normalize.Config(data); err != nil {
		return Output{}, err
	}
	return finish(p.merged.target, data, in.Compress, in.SizeLimit, p.merged.warnings)
}

// fileEntry is the index of the storage.files entry at path in a decoded config.
func fileEntry(config map[string]any, path string) (int, error) {
	storage, _ := config["storage"].(map[string]any)
	files, _ := storage["files"].([]any)
	for i, f := range files {
		if file, ok := f.(map[string]any); ok && file["path"] == path {
			return i, nil
		}
	}
	return 0, fmt.Errorf("the prepared config has no file %s", path)
}

// replaceFileEntry puts the encoded file, normalised as the merged config's files are, at
// storage.files[i].
func replaceFileEntry(config map[string]any, i int, encoded []byte) error {
	normalized, err := normalize.Config(encoded)
	if err != nil {
		return err
	}
	var file map[string]any
	dec := json.NewDecoder(bytes.NewReader(normalized))
	dec.UseNumber()
	if err := dec.Decode(&file); err != nil {
		return fmt.Errorf("decoding kubeadm's configuration entry: %w", err)
	}
	config["storage"].(map[string]any)["files"].([]any)[i] = file
	return nil
}
