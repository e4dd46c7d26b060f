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
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/merge"
	v3_0 "github.com/coreos/ignition/v2/config/v3_0"
	v3_1 "github.com/coreos/ignition/v2/config/v3_1"
	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	v3_6 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/vcontext/report"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/normalize"
)

// mergeFunc parses the base and the snippet (nil for none) at one spec version, merges the
// snippet over the base and returns the validated result as JSON. check looks at the merged
// JSON before Ignition validates it, so its more precise errors come first; every one it finds
// is returned.
type mergeFunc func(base []byte, snippet *snippet, check func(merged []byte) []*Error) ([]byte, []*Error)

// mergers maps every spec version the provider emits to its merge. Each version's
// ParseCompatibleVersion accepts that version and all older ones and translates them up, which
// is how the 3.0.0 base and a snippet of any lower version reach the target version.
var mergers = map[string]mergeFunc{
	"3.0.0": mergeAt(v3_0.ParseCompatibleVersion),
	"3.1.0": mergeAt(v3_1.ParseCompatibleVersion),
	"3.2.0": mergeAt(v3_2.ParseCompatibleVersion),
	"3.3.0": mergeAt(v3_3.ParseCompatibleVersion),
	"3.4.0": mergeAt(v3_4.ParseCompatibleVersion),
	"3.5.0": mergeAt(v3_5.ParseCompatibleVersion),
	"3.6.0": mergeAt(v3_6.ParseCompatibleVersion),
}

// mergeAt builds the mergeFunc of one spec version from its parser; C is that version's Config.
func mergeAt[C any](parse func([]byte) (C, report.Report, error)) mergeFunc {
	return func(base []byte, snippet *snippet, check func(merged []byte) []*Error) ([]byte, []*Error) {
		merged, rpt, err := parse(base)
		if err != nil {
			return nil, []*Error{reportError(ErrInvalidInput, Place{}, "the bootstrap configuration is not valid Ignition", err, rpt)}
		}
		if snippet != nil {
			child, rpt, err := parse(snippet.json)
			if err != nil {
				src := snippet.source
				return nil, []*Error{reportError(src.invalid, src.place(), src.name+"'s Ignition does not parse", err, rpt)}
			}
			// The snippet is the child: for an entry both define, its fields win. Owned paths
			// and units were rejected before, so this only ever adds to the base.
			result, _ := merge.MergeStructTranscribe(merged, child)
			merged = result.(C)
		}
		out, err := json.Marshal(merged)
		if err != nil {
			return nil, []*Error{errorf(ErrInvalidInput, Place{}, "cannot encode the merged config: %v", err)}
		}
		if out, err = normalize.Config(out); err != nil {
			return nil, []*Error{errorf(ErrInvalidInput, Place{}, "cannot encode the merged config: %v", err)}
		}
		if errs := check(out); len(errs) > 0 {
			return nil, errs
		}
		// Parse what is emitted, exactly as a node would: this validates the merged config
		// (duplicates, conflicts between base and snippet) with the target version's rules.
		if _, rpt, err := parse(out); err != nil {
			return nil, []*Error{reportError(ErrInvalidInput, Place{}, "the merged configuration is not valid Ignition", err, rpt)}
		}
		return out, nil
	}
}

// mergeConfigs merges at the target version, which targetIgnitionVersion took from the tables,
// and checks the result with check and with Ignition's validation.
func mergeConfigs(target string, base []byte, snippet *snippet, check func(merged []byte) []*Error) ([]byte, []*Error) {
	m, ok := mergers[target]
	if !ok {
		return nil, []*Error{errorf(ErrUnsupportedIgnitionVersion, At(PartIgnitionVersion), "no Ignition %s support", target)}
	}
	return m(base, snippet, check)
}

// reportError turns a failed Ignition parse into an *Error that carries the report's text.
func reportError(kind ErrorKind, at Place, what string, err error, rpt report.Report) *Error {
	msg := fmt.Sprintf("%s: %v", what, err)
	if text := strings.TrimSpace(rpt.String()); text != "" {
		msg += ": " + strings.ReplaceAll(text, "\n", "; ")
	}
	return &Error{Kind: kind, Place: at, Message: msg}
}
