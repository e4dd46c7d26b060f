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

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/docpos"
)

// ErrorKind classifies a rendering error so callers can map it to a stable condition reason or
// an admission field error. Kinds are stable. A kind is an error itself, so that
// errors.Is(err, ErrInvalidButane) asks for the kind of an *Error anywhere in err's chain.
type ErrorKind string

const (
	// ErrInvalidButane: the snippet does not parse or translate, or has warnings under strict.
	ErrInvalidButane ErrorKind = "InvalidButane"
	// ErrInvalidContainerLinuxConfig: the Container Linux Config does not parse or transpile,
	// uses what Ignition 3 cannot express, or has warnings under strict.
	ErrInvalidContainerLinuxConfig ErrorKind = "InvalidContainerLinuxConfig"
	// ErrVariantMismatch: the snippet's variant is not the config's variant, or a Container
	// Linux Config is given for a variant other than flatcar.
	ErrVariantMismatch ErrorKind = "VariantMismatch"
	// ErrOwnedPathConflict: the snippet or a file writes a path or unit the provider owns.
	ErrOwnedPathConflict ErrorKind = "OwnedPathConflict"
	// ErrUnsupportedKubernetesVersion: kubeadm config cannot be written for the version.
	ErrUnsupportedKubernetesVersion ErrorKind = "UnsupportedKubernetesVersion"
	// ErrUnsupportedIgnitionVersion: the pinned version does not exist for the variant or is too low.
	ErrUnsupportedIgnitionVersion ErrorKind = "UnsupportedIgnitionVersion"
	// ErrKubernetesDigestUnknown: a file the node would download and run (a release binary, a
	// system extension image) has no SHA-256 known: neither in cabpi's catalogue nor in
	// spec.kubernetes.digestsFrom (KubernetesPins).
	ErrKubernetesDigestUnknown ErrorKind = "KubernetesDigestUnknown"
	// ErrInvalidInput: anything else wrong with the input (bad role, bad file, merged config invalid).
	ErrInvalidInput ErrorKind = "InvalidInput"
)

// Error is the kind's name.
func (k ErrorKind) Error() string { return string(k) }

// Error is a rendering error caused by the input. Place is the part of the input at fault
// (PartButane, Entry(PartFile, 2, FileMode), At(PartIgnitionVersion), ...); Line and Column
// locate the error inside the Butane or Container Linux Config document when it is known
// (1-based, 0 when unknown).
type Error struct {
	Kind    ErrorKind
	Place   Place
	Line    int
	Column  int
	Message string
	// Value is the value at fault, for a caller that shows it beside the place (admission's
	// field error); nil where it is not one value or may be secret (a document, a kubeadm
	// section, a file's content, a command, a URL with user information or a query).
	Value any
}

// Error is the place, as messages show it, then the detail: "files[2].permissions: ...".
func (e *Error) Error() string {
	if at := e.Place.String(); at != "" {
		return at + ": " + e.Detail()
	}
	return e.Detail()
}

// Is reports whether target is the error's kind: errors.Is(err, ErrOwnedPathConflict).
func (e *Error) Is(target error) bool {
	kind, ok := target.(ErrorKind)
	return ok && kind == e.Kind
}

// Detail is the message with the position in the document when it is known, without the place
// (admission puts that in the field error's path).
func (e *Error) Detail() string {
	if pos := (docpos.Position{Line: e.Line, Column: e.Column}).String(); pos != "" {
		return e.Message + " (" + pos + ")"
	}
	return e.Message
}

// errorf builds an input error; line and column stay zero (unknown).
func errorf(kind ErrorKind, at Place, format string, args ...any) *Error {
	return &Error{Kind: kind, Place: at, Message: fmt.Sprintf(format, args...)}
}

// withValue sets the value at fault (Error.Value) and returns e.
func (e *Error) withValue(v any) *Error {
	e.Value = v
	return e
}

// asError returns e as an error interface, keeping a nil *Error a nil error: the exported
// validators return error, and a typed nil pointer inside an interface would not compare to nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
