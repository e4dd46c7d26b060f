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

package setup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The update Jobs run the manager's own image by the digest its node pulled; a reference with
// no digest to pin stays as the Pod names it.
func TestPinnedImage(t *testing.T) {
	const digest = "sha256:0b6e4a4f1d7f3a4b9c1e5f2a7d8c9b0a1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b"
	pod := func(image, imageID string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Spec.Containers = []corev1.Container{{Name: "kube-rbac-proxy", Image: "other.example/proxy:v1"}, {Name: managerContainer, Image: image}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "kube-rbac-proxy", ImageID: "other.example/proxy@" + digest},
			{Name: managerContainer, ImageID: imageID}}
		return p
	}
	tests := []struct {
		name, image, imageID, want string
	}{
		{"containerd's repository digest", "ghcr.io/cabpi/manager:v0.1.0", "ghcr.io/cabpi/manager@" + digest, "ghcr.io/cabpi/manager:v0.1.0@" + digest},
		{"docker's", "ghcr.io/cabpi/manager:v0.1.0", "docker-pullable://ghcr.io/cabpi/manager@" + digest, "ghcr.io/cabpi/manager:v0.1.0@" + digest},
		{"Docker Hub's short names", "cabpi/manager:v0.1.0", "docker.io/cabpi/manager@" + digest, "cabpi/manager:v0.1.0@" + digest},
		{"named by digest already", "ghcr.io/cabpi/manager@" + digest, "ghcr.io/cabpi/manager@sha256:" + "1111111111111111111111111111111111111111111111111111111111111111", "ghcr.io/cabpi/manager@" + digest},
		{"a local image ID, not a repository digest", "ghcr.io/cabpi/manager:v0.1.0", digest, "ghcr.io/cabpi/manager:v0.1.0"},
		{"another repository's digest", "ghcr.io/cabpi/manager:v0.1.0", "mirror.example/cabpi/manager@" + digest, "ghcr.io/cabpi/manager:v0.1.0"},
		{"not running yet", "ghcr.io/cabpi/manager:v0.1.0", "", "ghcr.io/cabpi/manager:v0.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pinnedImage(pod(tt.image, tt.imageID))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := pinnedImage(&corev1.Pod{})
	assert.Error(t, err, "no manager container")
}
