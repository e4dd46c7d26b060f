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

package clusterctl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// assertClientAuthAssets: the release's opt-in client certificates for the update extension
// (docs/adr/040) fit the components and each other. The serving Certificate is the components'
// own (names, DNS names, Secret) with only its issuer changed, to a CA ClusterIssuer whose CA is
// the chain's; Cluster API's client Certificate, in its namespace, is for client auth from the
// same issuer; cabpi's patch gives the manager's container --update-extension-client-ca naming
// the ca.crt of its mounted serving Secret; Cluster API's patch mounts the client Secret and
// points its two flags at the Secret's files.
func assertClientAuthAssets(t *testing.T, dir string, components []unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "update-extension-client-auth.yaml"))
	require.NoError(t, err)
	objs, err := toUnstructured(data)
	require.NoError(t, err)
	certificate := func(name string) *unstructured.Unstructured { return find(t, objs, "Certificate", name) }
	clusterIssuer := func(name string) *unstructured.Unstructured { return find(t, objs, "ClusterIssuer", name) }
	str := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedString(o.Object, path...)
		return v
	}

	components0 := byKind(components, "Certificate")
	require.Len(t, components0, 1, "the components have one Certificate, the serving one")
	want := &components0[0]
	serving := certificate(want.GetName())
	assert.Equal(t, want.GetNamespace(), serving.GetNamespace(), "the serving Certificate is the components' own")
	assert.Equal(t, str(want, "spec", "secretName"), str(serving, "spec", "secretName"), "with the same Secret")
	wantNames, _, _ := unstructured.NestedStringSlice(want.Object, "spec", "dnsNames")
	names, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
	assert.Equal(t, wantNames, names, "with the same DNS names")
	assert.Equal(t, "ClusterIssuer", str(serving, "spec", "issuerRef", "kind"))

	issuer := clusterIssuer(str(serving, "spec", "issuerRef", "name"))
	caSecret := str(issuer, "spec", "ca", "secretName")
	require.NotEmpty(t, caSecret, "the serving certificate's issuer is a CA issuer")
	var ca *unstructured.Unstructured
	for _, c := range byKind(objs, "Certificate") {
		if str(&c, "spec", "secretName") == caSecret {
			ca = &c
		}
	}
	require.NotNil(t, ca, "the CA issuer's Secret is a Certificate of the file")
	isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA")
	assert.True(t, isCA)
	assert.Equal(t, "cert-manager", ca.GetNamespace(), "a ClusterIssuer's CA Secret is in cert-manager's cluster resource namespace")
	_, selfSigned, _ := unstructured.NestedMap(clusterIssuer(str(ca, "spec", "issuerRef", "name")).Object, "spec", "selfSigned")
	assert.True(t, selfSigned, "the CA is self-signed")

	client := certificate("cabpi-update-extension-client")
	assert.Equal(t, "capi-system", client.GetNamespace(), "Cluster API's client certificate is in its namespace")
	assert.Equal(t, issuer.GetName(), str(client, "spec", "issuerRef", "name"), "issued by the CA that signs the serving certificate")
	usages, _, _ := unstructured.NestedStringSlice(client.Object, "spec", "usages")
	assert.Contains(t, usages, "client auth")

	// cabpi's patch, applied to the components' Deployment.
	deployments := byKind(components, "Deployment")
	require.Len(t, deployments, 1)
	cabpi := patchDeployment(t, &deployments[0], filepath.Join(dir, "client-auth-cabpi-manager-patch.yaml"))
	require.Equal(t, "manager", cabpi.Spec.Template.Spec.Containers[0].Name, "the patch's container 0 is the manager")
	assert.Contains(t, cabpi.Spec.Template.Spec.Containers[0].Args, "--update-extension-client-ca=ca.crt")
	mountsServingSecret := false
	for _, v := range cabpi.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == str(serving, "spec", "secretName") {
			mountsServingSecret = true
		}
	}
	assert.True(t, mountsServingSecret, "the manager mounts the serving Secret, whose ca.crt is the CA")

	// Cluster API's patch, applied to a Deployment shaped as its core manager's (one container,
	// the webhook certificate's volume).
	capiDeployment := &appsv1.Deployment{}
	capiDeployment.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Args: []string{"--leader-elect"},
		VolumeMounts: []corev1.VolumeMount{{Name: "cert", MountPath: "/tmp/k8s-webhook-server/serving-certs"}}}}
	capiDeployment.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cert"}}
	raw, err := json.Marshal(capiDeployment)
	require.NoError(t, err)
	var u unstructured.Unstructured
	require.NoError(t, json.Unmarshal(raw, &u.Object))
	capi := patchDeployment(t, &u, filepath.Join(dir, "client-auth-capi-manager-patch.yaml"))
	var mountPath string
	for _, v := range capi.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == str(client, "spec", "secretName") {
			for _, m := range capi.Spec.Template.Spec.Containers[0].VolumeMounts {
				if m.Name == v.Name {
					mountPath = m.MountPath
				}
			}
		}
	}
	require.NotEmpty(t, mountPath, "Cluster API's manager mounts the client certificate's Secret")
	assert.Contains(t, capi.Spec.Template.Spec.Containers[0].Args, "--runtime-extension-client-cert-file="+mountPath+"/tls.crt")
	assert.Contains(t, capi.Spec.Template.Spec.Containers[0].Args, "--runtime-extension-client-key-file="+mountPath+"/tls.key")
}

// patchDeployment applies a JSON patch file (YAML) to a Deployment, as kubectl patch --type json
// does.
func patchDeployment(t *testing.T, d *unstructured.Unstructured, patchFile string) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(patchFile)
	require.NoError(t, err)
	patchJSON, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)
	patch, err := jsonpatch.DecodePatch(patchJSON)
	require.NoError(t, err)
	doc, err := json.Marshal(d.Object)
	require.NoError(t, err)
	patched, err := patch.Apply(doc)
	require.NoError(t, err, "%s applies", filepath.Base(patchFile))
	out := &appsv1.Deployment{}
	require.NoError(t, json.Unmarshal(patched, out))
	return out
}
