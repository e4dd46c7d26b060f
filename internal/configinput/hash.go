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

package configinput

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// inputsHashPrefix names the digest in status.dataInputsHash.
const inputsHashPrefix = "sha256:"

// InputsHash is the digest of everything in, for status.dataInputsHash: SHA-256 of in encoded
// as JSON. ignition.Input is the renderer's whole input (spec, referenced content, the
// Cluster's facts, the Kubernetes version, the platform), so the digest changes exactly when
// what is rendered may change. The encoding is canonical for a given Input type: struct fields in
// declaration order, map keys sorted, bytes as base64. A cabpi version whose Input has other
// fields gives other digests (docs/adr/015).
//
// The caller decides what must not count: the controller hashes the input carrying
// PlaceholderToken, so refreshing or replacing the join token never changes the digest. The
// digest covers secret material (referenced Secret keys, certificate keys) but never reveals it.
func InputsHash(in ignition.Input) (string, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("encoding the renderer's input: %w", err)
	}
	sum := sha256.Sum256(data)
	return inputsHashPrefix + hex.EncodeToString(sum[:]), nil
}
