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
	"fmt"

	"github.com/coreos/vcontext/report"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// Warning is something in the input that renders but is probably not what the user meant: a key
// Butane does not know (and drops), a deprecated field. Place is the document it is in
// (PartButane, PartContainerLinuxConfig); Line and Column locate it in that document (1-based, 0
// when unknown). Warnings are carried in Output so every consumer shows them: admission
// warnings, the DataSecretAvailable message and an event, `cabpi render` on stderr. With strict
// they are errors instead.
type Warning struct {
	// Kind is what the warning is about; the zero kind is a document's own warning (Butane's,
	// the transpiler's).
	Kind    WarningKind
	Place   Place
	Line    int
	Column  int
	Message string
}

// WarningKind classifies a warning, so a caller can act on one kind without reading messages.
type WarningKind string

// WarnKubernetesVersionMismatch: the input brings a Kubernetes of its own (a system extension
// under source image) at another version than the one rendered for, which the caller may not
// know yet (admission without an owner renders for a default version).
const WarnKubernetesVersionMismatch WarningKind = "KubernetesVersionMismatch"

// WarnUserDefinedTwice: a user of spec.users is defined in the snippet as well; Ignition merges
// the two, the snippet's fields winning where both set one.
const WarnUserDefinedTwice WarningKind = "UserDefinedTwice"

// String is the place, the position in the document and the message: "butane: line 4, column
// 3: ...". A warning at PartWhole (as callers that say the place themselves make it) has none.
func (w Warning) String() string {
	loc := docpos.Position{Line: w.Line, Column: w.Column}.String()
	if loc != "" {
		loc += ": "
	}
	at := w.Place.String()
	if at == "" {
		return loc + w.Message
	}
	return fmt.Sprintf("%s: %s%s", at, loc, w.Message)
}

// reportWarnings returns the warning entries of a Butane (or Ignition) report at the place.
func reportWarnings(at Place, rpt report.Report) []Warning {
	var out []Warning
	for _, e := range rpt.Entries {
		if e.Kind != report.Warn {
			continue
		}
		w := Warning{Place: at, Message: e.Message}
		if e.Marker.StartP != nil {
			w.Line, w.Column = int(e.Marker.StartP.Line), int(e.Marker.StartP.Column)
		} else if len(e.Context.Path) > 0 {
			w.Message = fmt.Sprintf("%s: %s", e.Context.String(), e.Message)
		}
		out = append(out, w)
	}
	return out
}
