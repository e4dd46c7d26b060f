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
	"bytes"
	"compress/gzip"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// A user's password hash comes from a Secret (KubeadmConfig's passwdFrom): the data carries the
// hash, the spec never did; a gzip file in a Secret reaches the node decompressed.
func TestUsersAndEncodedFilesFromSecrets(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "ops"},
		Data:       map[string][]byte{"hash": []byte("$6$salt$secrethash\n"), "motd.gz": gzipData(t, []byte("hello from a Secret\n"))},
	}))
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{
		Users: []cabpiv1.User{{Name: "ops", Groups: []string{"sudo"},
			PasswordHashFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "ops", Key: "hash"}}}},
		Files: []cabpiv1.File{{Path: "/etc/motd", Encoding: cabpiv1.FileEncodingGzip,
			ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "ops", Key: "motd.gz"}}}},
	})
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	secret, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	config, err := ignition.Unwrap(secret.Data["value"])
	require.NoError(t, err)
	cfg, _, err := ignconfig.Parse(config)
	require.NoError(t, err)
	require.Len(t, cfg.Passwd.Users, 1)
	require.NotNil(t, cfg.Passwd.Users[0].PasswordHash)
	assert.Equal(t, "$6$salt$secrethash", *cfg.Passwd.Users[0].PasswordHash)
	files, err := ignition.ReadFiles(secret.Data["value"])
	require.NoError(t, err)
	assert.Equal(t, "hello from a Secret\n", string(files["/etc/motd"]))
}

func gzipData(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}
