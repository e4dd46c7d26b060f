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

	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
)

// Places of the user's provisioning documents; errors and warnings about a document are
// reported there.
var (
	butanePlace = At(PartButane)
	clcPlace    = At(PartContainerLinuxConfig)
)

// snippetSource is the kind of document a snippet was translated from: its part of the input,
// how messages call it, and the error kind of a mistake in the document itself.
type snippetSource struct {
	part    Part
	name    string
	invalid ErrorKind
}

var (
	butaneSource = snippetSource{part: PartButane, name: "the Butane snippet", invalid: ErrInvalidButane}
	clcSource    = snippetSource{part: PartContainerLinuxConfig, name: "the Container Linux Config", invalid: ErrInvalidContainerLinuxConfig}
)

// place is where errors about the document are.
func (src snippetSource) place() Place { return At(src.part) }

// errorf builds an error about the document, its message starting with the document's name:
// src.errorf(kind, "writes %s", p) says "the Butane snippet writes /etc/x".
func (src snippetSource) errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Place: src.place(), Message: src.name + " " + fmt.Sprintf(format, args...)}
}

// CheckOneDocument is the rule that a node's config merges at most one provisioning document:
// given both, the Container Linux Config is refused (Butane is the format to keep). butane and
// containerLinuxConfig say whether each is given, as the caller reads its input: Render counts a
// document that is not blank; a caller holding a spec counts a section set at all, as the CRD's
// rule does. The error is an *Error of kind ErrInvalidInput at PartContainerLinuxConfig. This is
// the rule's one home: the spec's callers (configinput, admission) apply it through here.
func CheckOneDocument(butane, containerLinuxConfig bool) error {
	return asError(oneDocument(butane, containerLinuxConfig))
}

func oneDocument(butane, containerLinuxConfig bool) *Error {
	if butane && containerLinuxConfig {
		return errorf(ErrInvalidInput, clcPlace, "set butane or containerLinuxConfig, not both")
	}
	return nil
}

// snippet is a user's document translated to Ignition 3.x, ready to be checked and merged over
// the provider's config.
type snippet struct {
	// source is the kind of document it was translated from.
	source snippetSource
	// json is the Ignition config the translation emitted.
	json []byte
	// version is the Ignition spec version of json.
	version string
	// config is json parsed at the newest spec, for looking at what it writes.
	config exptypes.Config
	// warnings are the translation's warnings (none under strict: they are errors there).
	warnings []Warning
}
