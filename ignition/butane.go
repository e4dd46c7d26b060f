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
	"fmt"
	"slices"
	"strings"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	exp "github.com/coreos/ignition/v2/config/v3_7_experimental"
	"github.com/coreos/vcontext/report"
	"gopkg.in/yaml.v3"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// butaneVariants are the variants Butane knows besides ours; a snippet naming one of them is a
// variant mismatch rather than a typo.
var butaneVariants = []string{"fcos", "flatcar", "openshift", "r4e", "fiot"}

// translateButane translates the Butane document doc to a snippet (nil for an empty document):
// it must parse and translate (with strict, without warnings either), use the variant and emit a
// stable Ignition version the variant supports; what it writes is checked by mergeInput
// (checkSnippet). Local file references are refused: no files directory is given to Butane, and
// the renderer reads nothing from disk. With compress, Butane gzips contents where that is
// shorter, as the provider does with its own files (Input.Compress).
func translateButane(variant cabpiv1.Variant, doc string, strict, compress bool) (*snippet, *Error) {
	spec, ierr := specFor(variant)
	if ierr != nil {
		return nil, ierr
	}
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	header, ierr := readButaneHeader(doc)
	if ierr != nil {
		return nil, ierr
	}
	if header.variant != string(variant) {
		if slices.Contains(butaneVariants, header.variant) {
			return nil, &Error{Kind: ErrVariantMismatch, Place: butanePlace, Line: header.variantLine, Column: header.variantColumn,
				Message: fmt.Sprintf("Butane variant %q does not match the config's variant %q", header.variant, variant)}
		}
		return nil, &Error{Kind: ErrInvalidButane, Place: butanePlace, Line: header.variantLine, Column: header.variantColumn,
			Message: fmt.Sprintf("unknown Butane variant %q; use %q", header.variant, variant)}
	}

	out, rpt, err := butane.TranslateBytes([]byte(doc), butanecommon.TranslateBytesOptions{
		// CAPD, one consumer of the output, does not decompress: without compress, contents
		// stay readable by every consumer (docs/adr/010, 011).
		TranslateOptions: butanecommon.TranslateOptions{NoResourceAutoCompression: !compress},
	})
	if err != nil {
		ierr := butaneReportError(rpt, err)
		if ierr.Line == 0 {
			// A type error ("line 6: cannot unmarshal !!str `rw` into int") has no report
			// entry; its line is only in the text.
			ierr.Line = docpos.YAMLErrorLine(err.Error())
		}
		var unknown butanecommon.ErrUnknownVersion
		if (errors.As(err, &unknown) || errors.Is(err, butanecommon.ErrInvalidVersion)) && ierr.Line == 0 {
			ierr.Line, ierr.Column = header.versionLine, header.versionColumn
		}
		return nil, ierr
	}
	if strict && hasWarnings(rpt) {
		return nil, butaneReportError(rpt, errors.New("warnings are errors in strict mode"))
	}
	warnings := reportWarnings(butanePlace, rpt)

	var emitted struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(out, &emitted); err != nil {
		return nil, errorf(ErrInvalidButane, butanePlace, "Butane emitted unreadable Ignition: %v", err)
	}
	if !slices.Contains(spec.allowed, emitted.Ignition.Version) {
		return nil, &Error{Kind: ErrInvalidButane, Place: butanePlace, Line: header.versionLine, Column: header.versionColumn,
			Message: fmt.Sprintf("Butane %s %s emits Ignition %s, which is not a stable version supported for %s (%v)",
				header.variant, header.version, emitted.Ignition.Version, variant, spec.allowed)}
	}

	cfg, rpt, err := exp.ParseCompatibleVersion(out)
	if err != nil {
		return nil, errorf(ErrInvalidButane, butanePlace, "the Ignition config Butane emitted does not parse: %v: %s",
			err, strings.TrimSpace(rpt.String()))
	}
	return &snippet{source: butaneSource, json: out, version: emitted.Ignition.Version, config: cfg, warnings: warnings}, nil
}

// butaneHeader is the variant and version of a Butane document and where they are.
type butaneHeader struct {
	variant, version           string
	variantLine, variantColumn int
	versionLine, versionColumn int
}

// readButaneHeader reads variant and version before translation, so a snippet for another
// variant is reported as a mismatch (Butane itself would only say it has no such translator),
// and so syntax errors, which Butane reports without a position, get a line.
func readButaneHeader(doc string) (butaneHeader, *Error) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		ierr := errorf(ErrInvalidButane, butanePlace, "Butane is not valid YAML: %v", err)
		ierr.Line = docpos.YAMLErrorLine(err.Error()) // yaml.v3 has no structured position
		return butaneHeader{}, ierr
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(root.Content) == 1 {
			line = root.Content[0].Line
		}
		return butaneHeader{}, &Error{Kind: ErrInvalidButane, Place: butanePlace, Line: line, Column: 1,
			Message: "Butane must be a YAML mapping with variant and version"}
	}
	var h butaneHeader
	mapping := root.Content[0]
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		key, value := mapping.Content[i], mapping.Content[i+1]
		switch key.Value {
		case "variant":
			h.variant, h.variantLine, h.variantColumn = value.Value, value.Line, value.Column
		case "version":
			h.version, h.versionLine, h.versionColumn = value.Value, value.Line, value.Column
		}
	}
	if h.variant == "" {
		return h, &Error{Kind: ErrInvalidButane, Place: butanePlace, Line: mapping.Line, Column: mapping.Column,
			Message: "Butane has no variant"}
	}
	if h.version == "" {
		return h, &Error{Kind: ErrInvalidButane, Place: butanePlace, Line: mapping.Line, Column: mapping.Column,
			Message: "Butane has no version"}
	}
	return h, nil
}

// butaneReportError turns a failed translation into an ErrInvalidButane located at the first
// report entry that has a position (fatal entries first). The message keeps Butane's report.
func butaneReportError(rpt report.Report, err error) *Error {
	ierr := &Error{Kind: ErrInvalidButane, Place: butanePlace, Message: err.Error()}
	if text := strings.TrimSpace(rpt.String()); text != "" {
		ierr.Message = fmt.Sprintf("%v: %s", err, strings.ReplaceAll(text, "\n", "; "))
	}
	for _, fatalFirst := range []bool{true, false} {
		for _, e := range rpt.Entries {
			if e.Kind.IsFatal() != fatalFirst || e.Marker.StartP == nil {
				continue
			}
			ierr.Line, ierr.Column = int(e.Marker.StartP.Line), int(e.Marker.StartP.Column)
			return ierr
		}
	}
	return ierr
}

// hasWarnings reports whether the report has entries above informational.
func hasWarnings(rpt report.Report) bool {
	for _, e := range rpt.Entries {
		if e.Kind == report.Warn || e.Kind.IsFatal() {
			return true
		}
	}
	return false
}
