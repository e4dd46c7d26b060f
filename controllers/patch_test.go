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

package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// patchStatus writes, besides the conditions, only the status fields its reconcile changed: a
// field it left alone keeps what the latest copy says, even when the reconcile read an older one.
func TestChangedStatusFields(t *testing.T) {
	delivered := cabpiv1.IgnitionConfigStatus{
		DataSecretName:     "w-0",
		Initialization:     cabpiv1.IgnitionConfigInitializationStatus{DataSecretCreated: ptr.To(true)},
		DataInputsHash:     "h1",
		ObservedGeneration: 2,
	}
	for _, tc := range []struct {
		name                  string
		before, after, latest cabpiv1.IgnitionConfigStatus
		want                  cabpiv1.IgnitionConfigStatus
	}{
		{name: "first render: every field recorded", after: delivered, want: delivered},
		{name: "nothing changed: the latest copy stays", before: delivered, after: delivered,
			latest: cabpiv1.IgnitionConfigStatus{DataInputsHash: "h2"}, want: cabpiv1.IgnitionConfigStatus{DataInputsHash: "h2"}},
		{name: "one field changed on an older copy: only it is written",
			before: delivered,
			after:  func() cabpiv1.IgnitionConfigStatus { s := delivered; s.DataInputsHash = "h3"; return s }(),
			latest: func() cabpiv1.IgnitionConfigStatus { s := delivered; s.ObservedGeneration = 3; return s }(),
			want: func() cabpiv1.IgnitionConfigStatus {
				s := delivered
				s.ObservedGeneration = 3
				s.DataInputsHash = "h3"
				return s
			}()},
		{name: "a field cleared is cleared", before: delivered,
			after:  cabpiv1.IgnitionConfigStatus{DataInputsHash: "h1", ObservedGeneration: 2},
			latest: delivered,
			want:   cabpiv1.IgnitionConfigStatus{DataInputsHash: "h1", ObservedGeneration: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			latest := tc.latest
			changedStatusFields(&tc.before, &tc.after, &latest)
			assert.Equal(t, tc.want, latest)
		})
	}
}
