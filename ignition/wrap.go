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
	"encoding/json"
	"fmt"

	t3_1 "github.com/coreos/ignition/v2/config/v3_1/types"
	"k8s.io/utils/ptr"
)

// wrapperSpecVersion is the spec the wrapper is built at: a config reference has a compression
// field from 3.1.0 on, so a 3.0.0 config is never wrapped.
const wrapperSpecVersion = "3.1.0"

// wrapConfig returns a wrapper of config at spec version, carrying config gzipped in a data
// URL, or nil where the version cannot (3.0.0). A node applies the wrapper exactly as config.
//
// The wrapper is built at 3.1.0 and translated up to the config's own version (so a node that
// reads the config reads the wrapper) the way the base config is: through mergeConfigs, which
// parses it with that version's parser, prunes it like every config the provider emits and
// validates it.
func wrapConfig(version string, config []byte) ([]byte, error) {
	if version == baseSpecVersion {
		return nil, nil
	}
	source := "data:;base64," + base64.StdEncoding.EncodeToString(gzipBytes(config))
	raw, err := json.Marshal(t3_1.Config{Ignition: t3_1.Ignition{Version: wrapperSpecVersion, Config: t3_1.IgnitionConfig{
		Replace: t3_1.Resource{Source: &source, Compression: ptr.To(compressionGzip)}}}})
	if err != nil {
		return nil, fmt.Errorf("encoding the wrapper config: %w", err)
	}
	out, errs := mergeConfigs(version, raw, nil, func([]byte) []*Error { return nil })
	if len(errs) > 0 {
		return nil, fmt.Errorf("the wrapper config is not valid Ignition: %w", errs[0])
	}
	return out, nil
}
