package testenv

// Namespaces: one per test (or per Cluster), never deleted.

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateNamespace creates a namespace named <prefix>-<random> and fails t on error. Namespaces
// are not deleted: envtest runs no namespace controller, so deletion would never finish anyway.
func (e *Environment) CreateNamespace(t testing.TB, prefix string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Annotations:  map[string]string{"testenv.cabpi.io/test": t.Name()},
	}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("testenv: creating namespace %q: %v", prefix, err)
	}
	return ns
}
