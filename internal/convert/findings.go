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

package convert

import "fmt"

// Severity says what a finding means for the conversion.
type Severity string

const (
	// Lossy: a source field has no faithful equivalent; the output lacks it or carries it
	// differently (the message says which). Lossy findings make the command exit 2 unless
	// --allow-lossy.
	Lossy Severity = "lossy"
	// Note: the conversion is faithful, but something deserves the user's attention (the source
	// rendered cloud-config, a reference elsewhere in the stream names a converted object).
	Note Severity = "note"
	// Warning: rendering the converted config warned (e.g. a key the snippet's transpiler drops).
	Warning Severity = "warning"
)

// Finding is one line of the command's report on stderr.
type Finding struct {
	Severity Severity
	// Object is "Kind namespace/name" (or "Kind name" without a namespace).
	Object string
	// Path is the field path in Object, e.g. "spec.template.spec.users[0].inactive".
	Path    string
	Message string
}

// String is the line printed: lossy findings as "OBJECT: PATH: why", the others prefixed with
// their severity.
func (f Finding) String() string {
	line := fmt.Sprintf("%s: %s: %s", f.Object, f.Path, f.Message)
	if f.Path == "" {
		line = fmt.Sprintf("%s: %s", f.Object, f.Message)
	}
	if f.Severity == Lossy {
		return line
	}
	return string(f.Severity) + ": " + line
}

// findings collects the findings of one object under its field path prefix.
type findings struct {
	object string
	prefix string // "spec." or "spec.template.spec."
	list   []Finding
}

func (f *findings) add(sev Severity, path, format string, args ...any) {
	f.list = append(f.list, Finding{Severity: sev, Object: f.object, Path: f.prefix + path, Message: fmt.Sprintf(format, args...)})
}

func (f *findings) lossy(path, format string, args ...any) { f.add(Lossy, path, format, args...) }

func (f *findings) note(path, format string, args ...any) { f.add(Note, path, format, args...) }
