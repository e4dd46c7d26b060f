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
