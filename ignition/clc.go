package ignition

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	translate3_4 "github.com/coreos/ignition/v2/config/v3_4/translate"
	translate3_5 "github.com/coreos/ignition/v2/config/v3_5/translate"
	translate3_6 "github.com/coreos/ignition/v2/config/v3_6/translate"
	translateexp "github.com/coreos/ignition/v2/config/v3_7_experimental/translate"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	clcconfig "github.com/flatcar/container-linux-config-transpiler/config"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"github.com/flatcar/ignition/config/validate/report"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// translateCLC makes a snippet of a Container Linux Config (translateSnippet calls it for a
// document that is not blank): transpiled to Ignition 2.3 by Flatcar's transpiler, translated to 3.3.0 (transpileCLC), its
// file contents encoded as the provider's are (gzipped where compress allows it and that is
// shorter) and validated. What it writes is checked by mergeInput (checkSnippet), as a Butane
// snippet's is. The language is Flatcar's alone: for fcos it is a variant mismatch.
func translateCLC(variant cabpiv1.Variant, doc string, strict, compress bool) (*snippet, *Error) {
	spec, ierr := specFor(variant)
	if ierr != nil {
		return nil, ierr
	}
	if variant != cabpiv1.VariantFlatcar || !slices.Contains(spec.allowed, clcSpecVersion) {
		return nil, errorf(ErrVariantMismatch, clcPlace, "a Container Linux Config is the legacy format of Container Linux, "+
			"which Flatcar (variant flatcar) continues; %s nodes never read it: write the snippet in Butane (spec.butane, variant: %s)",
			variant, variant)
	}
	cfg, warnings, ierr := transpileCLC(doc, strict)
	if ierr != nil {
		return nil, ierr
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
		return nil, reportError(ErrInvalidContainerLinuxConfig, clcPlace, "the Container Linux Config translated to Ignition "+clcSpecVersion+" is not valid", err, rpt)
	}
	return &snippet{source: clcSource, json: out, version: clcSpecVersion, config: newestSpec(parsed), warnings: warnings}, nil
}

// newestSpec translates a 3.3.0 config up to the newest spec, step by step as Ignition's
// ParseCompatibleVersion does after parsing.
func newestSpec(cfg v3types.Config) exptypes.Config {
	return translateexp.Translate(translate3_6.Translate(translate3_5.Translate(translate3_4.Translate(cfg))))
}

// transpileCLC transpiles a Container Linux Config with Flatcar's transpiler (no platform: its
// dynamic data is refused) and translates the Ignition 2.3 it emits to 3.3.0. It returns the
// warnings of both steps, the transpiler's report and the translation's, located in doc; with
// strict, a warning is an error instead.
func transpileCLC(doc string, strict bool) (v3types.Config, []Warning, *Error) {
	at := newCLCLocator(doc)
	ign2, rpt, ierr := transpile(doc, at)
	if ierr != nil {
		return v3types.Config{}, nil, ierr
	}
	warnings := clcReportWarnings(rpt)

	cfg, notes, ierr := translateV2(ign2, at)
	if ierr != nil {
		return v3types.Config{}, nil, ierr
	}
	warnings = append(warnings, notes...)
	if strict && len(warnings) > 0 {
		texts := make([]string, 0, len(warnings))
		for _, w := range warnings {
			w.Place = Place{}
			texts = append(texts, w.String())
		}
		return v3types.Config{}, nil, &Error{Kind: ErrInvalidContainerLinuxConfig, Place: clcPlace, Line: warnings[0].Line, Column: warnings[0].Column,
			Message: "warnings are errors in strict mode: " + strings.Join(texts, "; ")}
	}
	return cfg, warnings, nil
}

// transpile runs Flatcar's transpiler on doc: the Ignition 2.3 config and the report of its
// warnings, or the error that stopped it. The transpiler panics on some documents it decodes but
// cannot walk (a YAML alias where it rewrites a file's contents): a panic is an error about the
// document, never a crash of the provider.
func transpile(doc string, at clcLocator) (ign2 v2types.Config, rpt report.Report, ierr *Error) {
	defer func() {
		if r := recover(); r != nil {
			p := at.firstAlias()
			ierr = &Error{Kind: ErrInvalidContainerLinuxConfig, Place: clcPlace, Line: p.line, Column: p.column,
				Message: fmt.Sprintf("the Container Linux Config transpiler failed on this document (%v)", r)}
			if p.line > 0 {
				ierr.Message += "; it does not follow YAML aliases: write the aliased entry out"
			}
		}
	}()
	parsed, ast, rpt := clcconfig.Parse([]byte(doc))
	if rpt.IsFatal() {
		return ign2, rpt, clcReportError(rpt)
	}
	for i, f := range parsed.Storage.Files {
		// The transpiler would read it from the --files-dir directory: the renderer reads nothing.
		if f.Contents.Local != "" {
			p := at.path("storage", "files", i, "contents", "local")
			return ign2, rpt, &Error{Kind: ErrInvalidContainerLinuxConfig, Place: clcPlace, Line: p.line, Column: p.column,
				Message: fmt.Sprintf("storage.files[%d] (%s) reads its contents from a local file, which the provider cannot: "+
					"put them inline or give a remote url", i, f.Path)}
		}
	}
	ign2, converted := clcconfig.Convert(parsed, "", ast)
	rpt.Merge(converted)
	if converted.IsFatal() {
		return ign2, rpt, clcReportError(converted)
	}
	return ign2, rpt, nil
}

// clcReportError is a fatal transpiler report as an error located at its first error that has a
// position. A YAML type error has one only in its text ("line 6: cannot unmarshal ...").
func clcReportError(rpt report.Report) *Error {
	ierr := &Error{Kind: ErrInvalidContainerLinuxConfig, Place: clcPlace}
	var messages []string
	for _, e := range rpt.Entries {
		if e.Kind != report.EntryError {
			continue
		}
		messages = append(messages, strings.Join(strings.Fields(e.Message), " ")) // yaml's are indented lines
		if ierr.Line == 0 && e.Line > 0 {
			ierr.Line, ierr.Column = e.Line, e.Column
		}
	}
	ierr.Message = "the Container Linux Config does not transpile: " + strings.Join(messages, "; ")
	if ierr.Line == 0 {
		ierr.Line = docpos.YAMLErrorLine(ierr.Message)
	}
	return ierr
}

// clcReportWarnings are the warnings and deprecations of a transpiler report, each once (the
// transpiler validates the document and again its output, which can say one thing twice).
func clcReportWarnings(rpt report.Report) []Warning {
	var out []Warning
	for _, e := range rpt.Entries {
		if e.Kind != report.EntryWarning && e.Kind != report.EntryDeprecated {
			continue
		}
		w := Warning{Place: clcPlace, Line: e.Line, Column: e.Column, Message: strings.TrimSpace(e.Message)}
		same := func(o Warning) bool { return o.Line == w.Line && o.Column == w.Column && o.Message == w.Message }
		if !slices.ContainsFunc(out, same) {
			out = append(out, w)
		}
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
