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
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/clc"
)

// The translation's errors and warnings are the input's Container Linux Config's: of kind
// ErrInvalidContainerLinuxConfig, at PartContainerLinuxConfig, where the translation located
// them. (package clc knows nothing of the renderer's places.)
func TestCLCErrorsAndWarningsArePlaced(t *testing.T) {
	ierr := clcError(&clc.Error{Line: 3, Column: 7, Message: "unit x is defined again"})
	assert.Equal(t, ErrInvalidContainerLinuxConfig, ierr.Kind)
	assert.Equal(t, At(PartContainerLinuxConfig), ierr.Place)
	assert.Equal(t, []int{3, 7}, []int{ierr.Line, ierr.Column})
	assert.Equal(t, "containerLinuxConfig: unit x is defined again (line 3, column 7)", ierr.Error())
	assert.ErrorIs(t, ierr, ErrInvalidContainerLinuxConfig)

	warnings := clcWarnings([]clc.Warning{{Line: 2, Column: 3, Message: "Config has unrecognized key: filez"}})
	require.Len(t, warnings, 1)
	assert.Equal(t, Warning{Place: At(PartContainerLinuxConfig), Line: 2, Column: 3, Message: "Config has unrecognized key: filez"}, warnings[0])
	assert.Equal(t, "containerLinuxConfig: line 2, column 3: Config has unrecognized key: filez", warnings[0].String())
	assert.Nil(t, clcWarnings(nil), "no warnings stay none")
}
