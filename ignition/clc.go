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
	"errors"
	"slices"
	"strings"

	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	v3types "github.com/coreos/ignition/v2/config/v3_3/types"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/clc"
)

// translateCLC makes a snippet of a Container Linux Config (translateSnippet calls it for a
// document that is not blank): transpiled to Ignition 2.3 by Flatcar's transpiler and
// translated to clc.SpecVersion (clc.Transpile), its file contents encoded as the provider's are
// (gzipped where compress allows it and that is shorter) and validated. What it writes is
// checked by mergeInput (checkSnippet), as a Butane snippet's is. The language is Flatcar's
// alone: for fcos it is a variant mismatch.
func translateCLC(variant cabpiv1.Variant, doc string, strict, compress bool) (*snippet, *Error) {
	spec, ierr := specFor(variant)
	if ierr != nil {
		return nil, ierr
	}
	if variant != cabpiv1.VariantFlatcar || !slices.Contains(spec.allowed, clc.SpecVersion) {
		return nil, errorf(ErrVariantMismatch, clcPlace, "a Container Linux Config is the legacy format of Container Linux, "+
			"which Flatcar (variant flatcar) continues; %s nodes never read it: write the snippet in Butane (spec.butane, variant: %s)",
			variant, variant)
	}
	cfg, warnings, err := clc.Transpile(doc, strict)
	if err != nil {
		return nil, clcError(err)
	}
	encodeDataContents(&cfg, compress)
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, errorf(ErrInvalidContainerLinuxConfig, clcPlace, "cannot encode the translated config: %v", err)
	}
	// What 3.3.0 itself refuses (a unit file whose contents do not parse, paths that conflict
	// with units) is found by parsing the translation as a node would. That one parse is all:
	// the newest spec, which the checks read, is Ignition's translation of the parsed types.
	parsed, rpt, err := v3_3.Parse(out)
	if err != nil {
		return nil, reportError(ErrInvalidContainerLinuxConfig, clcPlace, "the Container Linux Config translated to Ignition "+clc.SpecVersion+" is not valid", err, rpt)
	}
	return &snippet{source: clcSource, json: out, version: clc.SpecVersion, config: clc.Newest(parsed), warnings: clcWarnings(warnings)}, nil
}

// clcError is an error of the Container Linux Config translation as an input error at the
// input's Container Linux Config. clc.Transpile returns *clc.Error only; anything else is
// reported at the document all the same, as it came from reading it.
func clcError(err error) *Error {
	var cerr *clc.Error
	if !errors.As(err, &cerr) {
		return errorf(ErrInvalidContainerLinuxConfig, clcPlace, "%v", err)
	}
	return &Error{Kind: ErrInvalidContainerLinuxConfig, Place: clcPlace, Line: cerr.Line, Column: cerr.Column, Message: cerr.Message}
}

// clcWarnings are the translation's warnings at the input's Container Linux Config.
func clcWarnings(warnings []clc.Warning) []Warning {
	var out []Warning
	for _, w := range warnings {
		out = append(out, Warning{Place: clcPlace, Line: w.Line, Column: w.Column, Message: w.Message})
	}
	return out
}

// encodeDataContents encodes the data URL contents and appends of files (not compressed, not
// verified) the way the provider encodes its own files: the shortest readable form, gzipped
// where compress allows it and that is shorter. The transpiler percent-escapes every byte it
// may; the contents stay the same.
func encodeDataContents(cfg *v3types.Config, compress bool) {
	encode := func(r *v3types.Resource) {
		if r.Source == nil || r.Compression != nil || r.Verification.Hash != nil || !strings.HasPrefix(*r.Source, "data:") {
			return
		}
		content, err := decodeResource(*r.Source, nil, 0)
		if err != nil {
			return // left for validation to report
		}
		c := fileContents(content, compress)
		r.Source, r.Compression = c.Source, c.Compression
	}
	for i := range cfg.Storage.Files {
		f := &cfg.Storage.Files[i]
		encode(&f.Contents)
		for j := range f.Append {
			encode(&f.Append[j])
		}
	}
}
