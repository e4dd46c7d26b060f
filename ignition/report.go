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
	"errors"
	"fmt"
	"strings"
)

// Report is every finding of one render, as Butane's report holds every entry of a translation:
// each error and warning with its place. Render returns it as its error when it has errors, so
// that errors.As(err, &e) with e an *Error gives the first finding (the controller maps its kind
// to a condition reason), Error() names the first problem and counts the rest, and Errors lists
// them all (admission shows each at its field path).
type Report struct {
	// Errors are the findings that stop the render, in the order of the render's steps.
	Errors []*Error
	// Warnings are what the input's documents were warned about, as Output.Warnings.
	Warnings []Warning
}

// Error names the first problem and counts the rest: "files[0].path: ...; and 2 more problems".
func (r *Report) Error() string {
	switch len(r.Errors) {
	case 0:
		return "no problems"
	case 1:
		return r.Errors[0].Error()
	case 2:
		return r.Errors[0].Error() + "; and 1 more problem"
	}
	return fmt.Sprintf("%s; and %d more problems", r.Errors[0].Error(), len(r.Errors)-1)
}

// Unwrap is the first finding: errors.As and errors.Is look at it, so a report reads as its
// first problem to a caller that wants one (errors.Is(err, ErrOwnedPathConflict)).
func (r *Report) Unwrap() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return r.Errors[0]
}

// Findings lists every error of err: all of a *Report's, the one *Error otherwise; nil for an
// error that is not the input's (a bug, or a caller's own).
func Findings(err error) []*Error {
	var rep *Report
	if errors.As(err, &rep) {
		return rep.Errors
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}

// add records a finding; nil is none. It reports whether there was one.
func (r *Report) add(e *Error) bool {
	if e == nil {
		return false
	}
	r.Errors = append(r.Errors, e)
	return true
}

// addAll records the findings of a check that reports more than one.
func (r *Report) addAll(errs []*Error) bool {
	r.Errors = append(r.Errors, errs...)
	return len(errs) > 0
}

// String lists every finding, one a line, for logs and tests.
func (r *Report) String() string {
	var b strings.Builder
	for _, e := range r.Errors {
		b.WriteString("error: " + e.Error() + "\n")
	}
	for _, w := range r.Warnings {
		b.WriteString("warning: " + w.String() + "\n")
	}
	return b.String()
}
