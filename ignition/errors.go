package ignition

import "fmt"

// ErrorKind classifies a rendering error so callers can map it to a stable condition reason or
// an admission field error. Kinds are stable.
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
	// ErrInvalidInput: anything else wrong with the input (bad role, bad file, merged config invalid).
	ErrInvalidInput ErrorKind = "InvalidInput"
)

// Error is a rendering error caused by the input. Field is the spec field at fault
// ("butane", "containerLinuxConfig", "files[2]", "ignitionVersion", ...); Line and Column locate
// the error inside the Butane or Container Linux Config document when it is known (1-based, 0
// when unknown).
type Error struct {
	Kind    ErrorKind
	Field   string
	Line    int
	Column  int
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Detail()
	}
	return e.Detail()
}

// Detail is the message with the place in the document when it is known, without the field
// (admission puts that in the field error's path).
func (e *Error) Detail() string {
	if pos := placeIn(e.Line, e.Column); pos != "" {
		return e.Message + " (" + pos + ")"
	}
	return e.Message
}

// placeIn is "line L, column C", "line L" when the column is unknown, "" when the line is.
func placeIn(line, column int) string {
	switch {
	case line > 0 && column > 0:
		return fmt.Sprintf("line %d, column %d", line, column)
	case line > 0:
		return fmt.Sprintf("line %d", line)
	}
	return ""
}

// errorf builds an input error; line and column stay zero (unknown).
func errorf(kind ErrorKind, field, format string, args ...any) *Error {
	return &Error{Kind: kind, Field: field, Message: fmt.Sprintf(format, args...)}
}

// asError returns e as an error interface, keeping a nil *Error a nil error: the exported
// validators return error, and a typed nil pointer inside an interface would not compare to nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
