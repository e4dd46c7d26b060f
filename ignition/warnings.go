package ignition

import (
	"fmt"

	"github.com/coreos/vcontext/report"
)

// Warning is something in the input that renders but is probably not what the user meant: a key
// Butane does not know (and drops), a deprecated field. Field is the spec field it is in
// ("butane"); Line and Column locate it in that document (1-based, 0 when unknown). Warnings are
// carried in Output so every consumer shows them: admission warnings, the DataSecretAvailable
// message and an event, `cabpi render` on stderr. With strict they are errors instead.
type Warning struct {
	Field   string
	Line    int
	Column  int
	Message string
}

func (w Warning) String() string {
	loc := placeIn(w.Line, w.Column)
	if loc != "" {
		loc += ": "
	}
	if w.Field == "" {
		return loc + w.Message
	}
	return fmt.Sprintf("%s: %s%s", w.Field, loc, w.Message)
}

// reportWarnings returns the warning entries of a Butane (or Ignition) report against field.
func reportWarnings(field string, rpt report.Report) []Warning {
	var out []Warning
	for _, e := range rpt.Entries {
		if e.Kind != report.Warn {
			continue
		}
		w := Warning{Field: field, Message: e.Message}
		if e.Marker.StartP != nil {
			w.Line, w.Column = int(e.Marker.StartP.Line), int(e.Marker.StartP.Column)
		} else if len(e.Context.Path) > 0 {
			w.Message = fmt.Sprintf("%s: %s", e.Context.String(), e.Message)
		}
		out = append(out, w)
	}
	return out
}
