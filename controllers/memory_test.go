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
	"time"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMemoryIsPerConfigAndForgotten(t *testing.T) {
	var m memory
	w0 := client.ObjectKey{Namespace: "ns", Name: "w0"}
	w1 := client.ObjectKey{Namespace: "ns", Name: "w1"}
	exp := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	m.setToken(w0, "abcdef", exp)
	assert.Equal(t, exp, m.tokenExpiration(w0, "abcdef"))
	assert.True(t, m.tokenExpiration(w0, "zzzzzz").IsZero(), "another token of the config is not known")
	assert.True(t, m.tokenExpiration(w1, "abcdef").IsZero(), "another config's token is not known")

	m.setToken(w0, "ghijkl", exp.Add(time.Hour)) // a MachinePool's rotation
	assert.True(t, m.tokenExpiration(w0, "abcdef").IsZero(), "the rotated token is forgotten")
	assert.Equal(t, exp.Add(time.Hour), m.tokenExpiration(w0, "ghijkl"))

	m.failed(w0, "h1")
	assert.True(t, m.failedWas(w0, "h1"))
	m.stored(w0)
	assert.False(t, m.failedWas(w0, "h1"), "stored data clears the failure")
	m.failed(w0, "h2")
	assert.True(t, m.failedWas(w0, "h2"))
	assert.False(t, m.failedWas(w1, "h2"))
	assert.False(t, m.failedWas(w1, ""), "nothing failed is not the empty digest")

	assert.True(t, m.firstNote(w0, 2))
	assert.False(t, m.firstNote(w0, 2))
	assert.True(t, m.firstNote(w0, 3))

	m.forgetToken(w0)
	assert.True(t, m.tokenExpiration(w0, "ghijkl").IsZero())
	assert.True(t, m.failedWas(w0, "h2"), "forgetting the token keeps the rest")

	m.forget(w0)
	assert.False(t, m.failedWas(w0, "h2"))
	assert.True(t, m.firstNote(w0, 3))
	m.forget(w0)
	m.forget(w1)
	assert.Empty(t, m.configs, "a deleted config leaves nothing behind")
}
