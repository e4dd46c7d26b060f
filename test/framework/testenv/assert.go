package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
)

// JoinTokens lists the join tokens cabpi made, by the IgnitionConfig they were made for
// ("namespace/name", from the token's description), in the workload cluster r reads (here the
// envtest API server).
func JoinTokens(ctx context.Context, r client.Reader) (map[string][]corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := r.List(ctx, list, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		return nil, fmt.Errorf("testenv: listing join tokens: %w", err)
	}
	out := map[string][]corev1.Secret{}
	for _, s := range list.Items {
		if s.Type != bootstrapapi.SecretTypeBootstrapToken {
			continue
		}
		if config, ok := strings.CutPrefix(string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey]), controllers.TokenDescriptionPrefix); ok {
			out[config] = append(out[config], s)
		}
	}
	return out, nil
}

// Cause is an admission error cause a test expects: the field path and part of the message.
type Cause struct{ Field, Msg string }

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
