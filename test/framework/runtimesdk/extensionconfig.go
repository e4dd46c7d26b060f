package runtimesdk

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// ExtensionConfigFor is an ExtensionConfig (cluster-scoped) for the extension served at url
// (https://host:port, Cluster API appends /<group>/<version>/<hook>/<handler>) with a serving
// certificate that caBundle (PEM) verifies; no namespaceSelector: it applies to every Namespace.
func ExtensionConfigFor(name, url string, caBundle []byte) *runtimev1.ExtensionConfig {
	return &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{URL: url, CABundle: caBundle},
		},
	}
}
