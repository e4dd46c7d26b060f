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

package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cause is an admission error cause a test expects: the field path and part of the message.
// It is an alias of a struct type, not a defined type, so that a suite's tables can name it
// (type cause = testenv.Cause) and write it unkeyed, {"spec.files[0].path", "absolute"},
// without vet's complaint about unkeyed fields of another package's struct.
type Cause = struct{ Field, Msg string }

// RequireRejected asserts err is the API's error of reason (Invalid, Forbidden) with at least
// the causes in want.
func RequireRejected(t testing.TB, err error, reason metav1.StatusReason, want ...Cause) {
	t.Helper()
	require.Error(t, err, "expected the API server to reject the object")
	var status *apierrors.StatusError
	require.True(t, errors.As(err, &status), "not a StatusError: %v", err)
	require.Equal(t, reason, status.ErrStatus.Reason, "error: %v", err)
	require.NotNil(t, status.ErrStatus.Details, "error: %v", err)
	causes := status.ErrStatus.Details.Causes
	for _, w := range want {
		found := false
		for _, c := range causes {
			if c.Field == w.Field && strings.Contains(c.Message, w.Msg) {
				found = true
				break
			}
		}
		assert.True(t, found, "no cause on %s containing %q; causes: %s", w.Field, w.Msg, FormatCauses(causes))
	}
}

// FormatCauses prints causes one a line, for assertion messages.
func FormatCauses(causes []metav1.StatusCause) string {
	var b strings.Builder
	for _, c := range causes {
		fmt.Fprintf(&b, "\n  %s: %s", c.Field, c.Message)
	}
	return b.String()
}
