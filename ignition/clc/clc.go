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

// Package clc translates a Container Linux Config, Flatcar's legacy provisioning format, to
// Ignition 3: Flatcar's transpiler makes Ignition 2.3 of it, and the translation here says the
// same in 3.3.0 (docs/adr/013), or refuses what 3.x cannot say, located in the document.
//
// It knows nothing of the renderer: package ignition checks the variant, encodes the contents
// and merges the result as it does a Butane snippet, and reports this package's errors and
// warnings at the input's Container Linux Config.
package clc

import (
	"fmt"
	"slices"
	"strings"

	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	translate3_4 "github.com/coreos/ignition/v2/config/v3_4/translate"
	translate3_5 "github.com/coreos/ignition/v2/config/v3_5/translate"
	translate3_6 "github.com/coreos/ignition/v2/config/v3_6/translate"
	translateexp "github.com/coreos/ignition/v2/config/v3_7_experimental/translate"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	clcconfig "github.com/flatcar/container-linux-config-transpiler/config"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"github.com/flatcar/ignition/config/validate/report"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// SpecVersion is the Ignition spec a Container Linux Config is translated to: the lowest 3.x
// spec Flatcar reads. The renderer translates it up to its output's version.
const SpecVersion = "3.3.0"

// Error is a Container Linux Config that cannot be translated: it does not parse or
// transpile, uses what Ignition 3 cannot say, or has warnings under strict. Line and Column
// locate the mistake in the document (1-based, 0 when unknown).
type Error struct {
	Line, Column int
	Message      string
}

// Error is the message with its position in the document when it is known.
func (e *Error) Error() string {
	if pos := (docpos.Position{Line: e.Line, Column: e.Column}).String(); pos != "" {
		return e.Message + " (" + pos + ")"
	}
	return e.Message
}

// errorAt is an error at position p.
func errorAt(p docpos.Position, format string, args ...any) *Error {
	return &Error{Line: p.Line, Column: p.Column, Message: fmt.Sprintf(format, args...)}
}

// Warning is something in the document that translates but probably not as meant: a key the
// transpiler does not know, a deprecated section, a construct Ignition 3 does slightly
// differently. Line and Column locate it in the document (1-based, 0 when unknown).
type Warning struct {
	Line, Column int
	Message      string
}

// String is the position in the document, when it is known, and the message: "line 2, column
// 3: ...".
func (w Warning) String() string {
	if pos := (docpos.Position{Line: w.Line, Column: w.Column}).String(); pos != "" {
		return pos + ": " + w.Message
	}
	return w.Message
}

// warningAt is a warning at position p.
func warningAt(p docpos.Position, format string, args ...any) Warning {
	return Warning{Line: p.Line, Column: p.Column, Message: fmt.Sprintf(format, args...)}
}

// Transpile transpiles the Container Linux Config doc with Flatcar's transpiler (no platform:
// its dynamic data is refused) and translates the Ignition 2.3 it emits to SpecVersion. It
// returns the warnings of both steps, the transpiler's report and the translation's, located in
// doc; with strict, a warning is an error instead. Every error is an *Error.
func Transpile(doc string, strict bool) (v3types.Config, []Warning, error) {
	at := newLocator(doc)
	ign2, rpt, cerr := transpile(doc, at)
	if cerr != nil {
		return v3types.Config{}, nil, cerr
	}
	warnings := reportWarnings(rpt)

	cfg, notes, cerr := translateV2(ign2, at)
	if cerr != nil {
		return v3types.Config{}, nil, cerr
	}
	warnings = append(warnings, notes...)
	if strict && len(warnings) > 0 {
		texts := make([]string, 0, len(warnings))
		for _, w := range warnings {
			texts = append(texts, w.String())
		}
		return v3types.Config{}, nil, &Error{Line: warnings[0].Line, Column: warnings[0].Column,
			Message: "warnings are errors in strict mode: " + strings.Join(texts, "; ")}
	}
	return cfg, warnings, nil
}

// Newest is cfg, a config at SpecVersion, translated up to the newest spec step by step, as
// Ignition's ParseCompatibleVersion does after parsing: the renderer reads what a translation
// writes at that spec.
func Newest(cfg v3types.Config) exptypes.Config {
	return translateexp.Translate(translate3_6.Translate(translate3_5.Translate(translate3_4.Translate(cfg))))
}

// transpile runs Flatcar's transpiler on doc: the Ignition 2.3 config and the report of its
// warnings, or the error that stopped it. The transpiler panics on some documents it decodes but
// cannot walk (a YAML alias where it rewrites a file's contents): a panic is an error about the
// document, never a crash of the provider.
func transpile(doc string, at locator) (ign2 v2types.Config, rpt report.Report, cerr *Error) {
	defer func() {
		if r := recover(); r != nil {
			p := at.firstAlias()
			cerr = errorAt(p, "the Container Linux Config transpiler failed on this document (%v)", r)
			if p.Line > 0 {
				cerr.Message += "; it does not follow YAML aliases: write the aliased entry out"
			}
		}
	}()
	parsed, ast, rpt := clcconfig.Parse([]byte(doc))
	if rpt.IsFatal() {
		return ign2, rpt, reportError(rpt)
	}
	for i, f := range parsed.Storage.Files {
		// The transpiler would read it from the --files-dir directory: the renderer reads nothing.
		if f.Contents.Local != "" {
			return ign2, rpt, errorAt(at.path("storage", "files", i, "contents", "local"),
				"storage.files[%d] (%s) reads its contents from a local file, which the provider cannot: "+
					"put them inline or give a remote url", i, f.Path)
		}
	}
	ign2, converted := clcconfig.Convert(parsed, "", ast)
	rpt.Merge(converted)
	if converted.IsFatal() {
		return ign2, rpt, reportError(converted)
	}
	return ign2, rpt, nil
}

// reportError is a fatal transpiler report as an error located at its first error that has a
// position. A YAML type error has one only in its text ("line 6: cannot unmarshal ...").
func reportError(rpt report.Report) *Error {
	cerr := &Error{}
	var messages []string
	for _, e := range rpt.Entries {
		if e.Kind != report.EntryError {
			continue
		}
		messages = append(messages, strings.Join(strings.Fields(e.Message), " ")) // yaml's are indented lines
		if cerr.Line == 0 && e.Line > 0 {
			cerr.Line, cerr.Column = e.Line, e.Column
		}
	}
	cerr.Message = "the Container Linux Config does not transpile: " + strings.Join(messages, "; ")
	if cerr.Line == 0 {
		cerr.Line = docpos.YAMLErrorLine(cerr.Message)
	}
	return cerr
}

// reportWarnings are the warnings and deprecations of a transpiler report, each once (the
// transpiler validates the document and again its output, which can say one thing twice).
func reportWarnings(rpt report.Report) []Warning {
	var out []Warning
	for _, e := range rpt.Entries {
		if e.Kind != report.EntryWarning && e.Kind != report.EntryDeprecated {
			continue
		}
		w := Warning{Line: e.Line, Column: e.Column, Message: strings.TrimSpace(e.Message)}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
