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
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// Data over the platform's user-data limit is stored whole, and DataSecretAvailable says so
// (True, OverPlatformLimit) with the size and the limit.
func TestDataOverThePlatformLimitIsStoredWithAWarning(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	rnd := rand.New(rand.NewPCG(3, 4))
	raw := make([]byte, 24*1024) // random: no compression brings it under AWS's 16 KiB
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{
		Platform: cabpiv1.PlatformAWS,
		Files:    []cabpiv1.File{{Path: "/opt/blob", Content: base64.StdEncoding.EncodeToString(raw)}},
	})
	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.OverPlatformLimitReason)
	assert.Contains(t, c.Message, "16384")
	secret, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok, "the data is stored all the same")
	assert.Greater(t, len(secret.Data["value"]), 16384, "nothing is truncated")
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
}

// CAPD does not decompress: the docker platform's data has no compressed contents, where the
// same spec on an unknown platform has.
func TestDockerPlatformDataIsUncompressed(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	script := strings.Repeat("echo a line that compresses well\n", 200)
	spec := cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: []string{script}}
	f.AddMachine(t, "plain", false, spec)
	spec.Platform = cabpiv1.PlatformDocker
	f.AddMachine(t, "capd", false, spec)
	fx.WaitForCondition(t, f.Namespace, "plain", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	fx.WaitForCondition(t, f.Namespace, "capd", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	plain, _ := fx.DataSecret(t, f.Namespace, "plain")
	capd, _ := fx.DataSecret(t, f.Namespace, "capd")
	assert.Contains(t, string(plain.Data["value"]), `"compression":"gzip"`)
	assert.NotContains(t, string(capd.Data["value"]), "compression")
}

// A Butane key that is not known is dropped by Butane: the data is stored (not strict), and
// DataSecretAvailable (True, RenderedWithWarnings) and a warning event say where it was.
func TestButaneWarningsAreShownOnTheCondition(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{
		Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  filez:\n  - path: /etc/motd\n"}})
	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.RenderedWithWarningsReason)
	assert.Contains(t, c.Message, "spec.butane: line 4, column 3: unused key filez")
	_, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok, "warnings do not stop the data")
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		events := eventsFor(c, f.Namespace, "w0", cabpiv1.RenderedWithWarningsReason)
		assert.NotEmpty(c, events, "a warning event names the warning")
		for _, e := range events {
			assert.Contains(c, e.Note, "unused key filez")
		}
	}, eventually, tick)
}
