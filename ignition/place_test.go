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

package ignition_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// A place reads in messages as the spec's field path under spec (what users wrote); nothing
// parses it back.
func TestPlaceString(t *testing.T) {
	cases := map[string]ignition.Place{
		"":                      {},
		"butane":                ignition.At(ignition.PartButane),
		"containerLinuxConfig":  ignition.At(ignition.PartContainerLinuxConfig),
		"ignitionVersion":       ignition.At(ignition.PartIgnitionVersion),
		"version":               ignition.At(ignition.PartKubernetesVersion),
		"files[2]":              ignition.Entry(ignition.PartFile, 2),
		"files[2].permissions":  ignition.Entry(ignition.PartFile, 2, ignition.FileMode),
		"certificates[0]":       ignition.Entry(ignition.PartCertificate, 0),
		"preKubeadmCommands[3]": ignition.Entry(ignition.PartPreKubeadmCommand, 3),
		"nodeName.fromMetadata": ignition.At(ignition.PartNodeName, ignition.NodeNamePlatform),
		"joinConfiguration.discovery.bootstrapToken.token": ignition.At(ignition.PartJoinConfiguration, "discovery", "bootstrapToken", "token"),
	}
	for want, at := range cases {
		assert.Equal(t, want, at.String())
	}
}

// An error's kind is found with errors.Is through wrapping; its place with errors.As.
func TestErrorKindIs(t *testing.T) {
	_, err := ignition.Render(ignition.Input{Variant: "ubuntu"})
	wrapped := errors.Join(errors.New("rendering"), err)
	assert.ErrorIs(t, wrapped, ignition.ErrInvalidInput)
	assert.NotErrorIs(t, wrapped, ignition.ErrInvalidButane)
	var ierr *ignition.Error
	if assert.ErrorAs(t, wrapped, &ierr) {
		assert.Equal(t, ignition.PartVariant, ierr.Place.Part)
		assert.Equal(t, `variant: unknown variant "ubuntu"; supported: flatcar, fcos`, ierr.Error())
	}
}
