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

// Package normalize prunes an encoded Ignition config to what it says: the renderer emits every
// config this way, and tests compare translations the same way.
package normalize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// DefaultFileMode is Ignition's mode for a file with contents and none of its own, which Config
// writes out.
const DefaultFileMode = 0o644

// Config gives every file with contents an explicit mode and removes null values, empty
// objects, empty arrays and empty compression names from an encoded config.
//
// Only snippet files can lack a mode. Those with contents get Ignition's default, 0644, written
// out, because CAPD dereferences the mode of every file it writes. Those without (an entry that
// only appends, or only sets the owner) keep none: Ignition then leaves an existing file's mode
// as it is, and 0644 would change it.
//
// Ignition's Go types marshal every unset struct as {} ("proxy": {}, "group": {}), which makes
// the output several times longer than what it says and counts against platform user-data
// limits. Absent and empty mean the same to Ignition, so the pruned config is equivalent; it is
// validated again after pruning all the same. Butane writes `"compression": ""` on every
// resource it does not compress, so that a merged child does not inherit a parent's
// compression; the merge is done by then, and what is emitted is only ever the config itself or
// carried by a config.replace, which replaces and never merges, so it goes too. Keys come out
// sorted, so the bytes stay deterministic; numbers keep their exact text.
func Config(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding config to prune it: %w", err)
	}
	defaultFileModes(v)
	pruned, _ := prune(v)
	out, err := json.Marshal(pruned)
	if err != nil {
		return nil, fmt.Errorf("encoding pruned config: %w", err)
	}
	return out, nil
}

// defaultFileModes sets storage.files[].mode where it is missing or null and contents.source
// is set.
func defaultFileModes(config any) {
	root, _ := config.(map[string]any)
	storage, _ := root["storage"].(map[string]any)
	files, _ := storage["files"].([]any)
	for _, f := range files {
		file, ok := f.(map[string]any)
		if !ok || file["mode"] != nil {
			continue
		}
		if contents, _ := file["contents"].(map[string]any); contents["source"] != nil {
			file["mode"] = json.Number(strconv.Itoa(DefaultFileMode))
		}
	}
}

// prune returns v without empty members, and whether anything is left of it.
func prune(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		if t["compression"] == "" {
			delete(t, "compression")
		}
		for k, member := range t {
			if p, keep := prune(member); keep {
				t[k] = p
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	case []any:
		kept := t[:0]
		for _, member := range t {
			// An array member is never dropped (its position may matter); only emptied.
			p, _ := prune(member)
			if p == nil {
				p = map[string]any{}
			}
			kept = append(kept, p)
		}
		return kept, len(kept) > 0
	default:
		return v, true
	}
}
