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

package controllers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// A Container Linux Config from a Secret or ConfigMap (which admission never reads) is checked
// when rendered: a bad one is an InvalidContainerLinuxConfig condition with its line, and no
// data Secret and no join token exist for it; a good one gives data the real Ignition applies.
func TestContainerLinuxConfig(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	const bad = `storage:
  filesystems:
    - name: oem
      mount: {device: /dev/disk/by-label/OEM, format: btrfs}
  files:
    - filesystem: oem
      path: /grub.cfg
      mode: 0644
`
	const good = `storage:
  files:
    - path: /etc/cabpi/from-clc
      mode: 0640
      contents:
        inline: hello from a Container Linux Config
networkd:
  units:
    - name: 00-eth0.network
      contents: "[Match]\nName=eth0\n"
`
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "clc"}, Data: map[string][]byte{"config.yaml": []byte(bad)}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "clc"}, Data: map[string]string{"config.yaml": good}}))
	from := func(source cabpiv1.ButaneSource) cabpiv1.IgnitionConfigSpec {
		return cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{ContentFrom: &source}}
	}
	ref := &cabpiv1.KeyReference{Name: "clc", Key: "config.yaml"}
	f.AddMachine(t, "bad", false, from(cabpiv1.ButaneSource{Secret: ref}))
	f.AddMachine(t, "good", false, from(cabpiv1.ButaneSource{ConfigMap: ref}))

	c := fx.WaitForCondition(t, f.Namespace, "bad", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidContainerLinuxConfigReason)
	assert.Contains(t, c.Message, `/grub.cfg is on filesystem "oem", which Ignition 2 mounted only to write it`)
	assert.Contains(t, c.Message, "(line 6, column 7)")

	fx.WaitForCondition(t, f.Namespace, "good", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	secret, ok := fx.DataSecret(t, f.Namespace, "good")
	require.True(t, ok)
	root := ignitionapply.Apply(t, secret.Data["value"])
	assert.True(t, ignitionapply.UnitEnabled(t, root, "kubeadm.service"))
	assert.Equal(t, "hello from a Container Linux Config", fileIn(t, secret.Data["value"], "/etc/cabpi/from-clc"))
	assert.FileExists(t, root+"/etc/cabpi/from-clc")
	assert.FileExists(t, root+"/etc/systemd/network/00-eth0.network")

	fixtures.Never(t, 2*time.Second, 200*time.Millisecond, func() bool {
		_, ok := fx.DataSecret(t, f.Namespace, "bad")
		return ok || len(fx.TokensOf(t, f.Namespace, "bad")) > 0
	}, "no data Secret and no join token for a Container Linux Config that does not render")
}
