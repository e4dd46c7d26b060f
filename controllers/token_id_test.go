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
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

// Token IDs are kubeadm token IDs, the same for the same config and predecessor (so a retry
// finds the token an earlier try made), and different for another config or predecessor (so a
// rotation gets a new token while the old one lives on).
func TestJoinTokenID(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]{6}$`)
	seen := map[string]bool{}
	for _, uid := range []types.UID{"8f1e0f6c-0000-4000-8000-000000000001", "8f1e0f6c-0000-4000-8000-000000000002"} {
		for _, previous := range []string{"", "abc123", "def456"} {
			id := JoinTokenID(uid, previous)
			assert.Regexp(t, valid, id)
			assert.Equal(t, id, JoinTokenID(uid, previous), "deterministic")
			assert.False(t, seen[id], "distinct for %s after %q", uid, previous)
			seen[id] = true
		}
	}
}
