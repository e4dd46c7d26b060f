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

package webhooks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The diff of a rejected template change shows what changed but none of the values that may be
// secret, changed or not.
func TestSpecDiffRedactsSecrets(t *testing.T) {
	spec := func(token, envValue, content, command string) *cabpiv1.IgnitionConfigSpec {
		s := &cabpiv1.IgnitionConfigSpec{
			PreKubeadmCommands: []string{command},
			Files:              []cabpiv1.File{{Path: "/etc/app.conf", Content: content}},
		}
		s.JoinConfiguration.Discovery.TLSBootstrapToken = token
		s.JoinConfiguration.Discovery.BootstrapToken.Token = token
		s.ClusterConfiguration.APIServer.ExtraEnvs = &[]kubeadmv1.EnvVar{{EnvVar: corev1.EnvVar{Name: "HTTPS_PROXY", Value: envValue}}}
		return s
	}
	diff := specDiff(
		spec("abcdef.0123456789abcdef", "http://user:old-password@proxy", "old-file-secret", "docker login -p old-registry-pass reg.example.com"),
		spec("ghijkl.0123456789ghijkl", "http://user:new-password@proxy", "new-file-secret", "docker login -p new-registry-pass reg.example.com"))

	for _, secret := range []string{"abcdef", "ghijkl", "old-password", "new-password", "old-file-secret", "new-file-secret",
		"old-registry-pass", "new-registry-pass"} {
		assert.NotContains(t, diff, secret)
	}
	assert.Contains(t, diff, `"/etc/app.conf"`, "what is not secret is shown")
	assert.Contains(t, diff, "HTTPS_PROXY", "names are shown")
	assert.GreaterOrEqual(t, strings.Count(diff, "<redacted: changed>"), 4, diff)
}
