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

package configinput

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// secretResolver serves Secret keys from a map (a pure unit test of decoding; the controller's
// resolver is tested against the API server).
type secretResolver map[string][]byte

func (s secretResolver) SecretKey(_ context.Context, field RefField, ref cabpiv1.KeyReference) ([]byte, error) {
	data, ok := s[ref.Name+"/"+ref.Key]
	if !ok {
		return nil, &MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key}
	}
	return data, nil
}

func (s secretResolver) ConfigMapKey(context.Context, RefField, cabpiv1.KeyReference) (string, error) {
	return "", nil
}

// Files keep KubeadmConfig's meaning of encoding: the node gets the decoded bytes, whether the
// content is inline or in a Secret; content that does not decode is an input error on the field.
func TestFileEncodings(t *testing.T) {
	want := []byte("#!/bin/sh\necho hello\n")
	b64 := base64.StdEncoding.EncodeToString(want)
	gz := gzipped(t, want)
	gzb64 := base64.StdEncoding.EncodeToString(gz)
	bomb := gzipped(t, make([]byte, maxDecodedFileBytes+1))
	res := secretResolver{"s/gz": gz, "s/b64": []byte(b64 + "\n"), "s/bomb": bomb}
	from := func(key string) *cabpiv1.FileSource {
		return &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "s", Key: key}}
	}

	for name, tc := range map[string]struct {
		file    cabpiv1.File
		errPath string
	}{
		"plain":                 {file: cabpiv1.File{Content: string(want)}},
		"base64 inline":         {file: cabpiv1.File{Content: b64, Encoding: cabpiv1.FileEncodingBase64}},
		"base64 wrapped lines":  {file: cabpiv1.File{Content: b64[:10] + "\n" + b64[10:] + "\n", Encoding: cabpiv1.FileEncodingBase64}},
		"gzip+base64 inline":    {file: cabpiv1.File{Content: gzb64, Encoding: cabpiv1.FileEncodingGzipBase64}},
		"gzip from a Secret":    {file: cabpiv1.File{ContentFrom: from("gz"), Encoding: cabpiv1.FileEncodingGzip}},
		"base64 from a Secret":  {file: cabpiv1.File{ContentFrom: from("b64"), Encoding: cabpiv1.FileEncodingBase64}},
		"not base64":            {file: cabpiv1.File{Content: "not base64!", Encoding: cabpiv1.FileEncodingBase64}, errPath: "files[0].content"},
		"base64 but not gzip":   {file: cabpiv1.File{Content: b64, Encoding: cabpiv1.FileEncodingGzipBase64}, errPath: "files[0].content"},
		"gzip bomb":             {file: cabpiv1.File{ContentFrom: from("bomb"), Encoding: cabpiv1.FileEncodingGzip}, errPath: "files[0].contentFrom"},
		"Secret value not gzip": {file: cabpiv1.File{ContentFrom: from("b64"), Encoding: cabpiv1.FileEncodingGzip}, errPath: "files[0].contentFrom"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.file.Path = "/opt/bin/hello"
			f, findings, err := fileFromSpec(t.Context(), 0, tc.file, res)
			require.NoError(t, err)
			if tc.errPath == "" {
				require.Empty(t, findings)
				assert.Equal(t, want, f.Content)
				return
			}
			require.Len(t, findings, 1, "%v", findings)
			assert.Equal(t, tc.errPath, findings[0].Place.String())
		})
	}

	// Offline (admission, cabpi render) a Secret's content is a placeholder: not decoded.
	f, findings, err := fileFromSpec(t.Context(), 0, cabpiv1.File{Path: "/x", ContentFrom: from("gz"), Encoding: cabpiv1.FileEncodingGzip}, OfflineResolver{})
	require.NoError(t, err)
	require.Empty(t, findings)
	assert.Contains(t, string(f.Content), "placeholder")
}

// A password hash from a Secret is one line; the newline an editor leaves is not part of it.
func TestPasswordHashFrom(t *testing.T) {
	res := secretResolver{"pw/hash": []byte("$6$salt$hash\n"), "pw/two": []byte("$6$a\n$6$b\n")}
	ref := func(key string) *cabpiv1.FileSource {
		return &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "pw", Key: key}}
	}
	u, err := userFromSpec(t.Context(), 0, cabpiv1.User{Name: "ops", PasswordHashFrom: ref("hash")}, res)
	require.NoError(t, err)
	assert.Equal(t, "$6$salt$hash", u.PasswordHash)

	_, err = userFromSpec(t.Context(), 1, cabpiv1.User{Name: "ops", PasswordHashFrom: ref("two")}, res)
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr)
	assert.Equal(t, "users[1].passwordHashFrom", ierr.Place.String())

	_, err = userFromSpec(t.Context(), 0, cabpiv1.User{Name: "ops", PasswordHashFrom: ref("missing")}, res)
	var missing *MissingReferenceError
	require.ErrorAs(t, err, &missing, "a missing Secret waits, as other references do")
}

// CAPD reads Ignition with spec 2.3 types and cannot read append: refused for platform docker
// (a finding of the input, which the render reports).
func TestAppendRefusedForCAPD(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformDocker,
		Files: []cabpiv1.File{{Path: "/etc/hosts", Content: "x", Append: true}}}
	_, err := RenderOffline(t.Context(), spec, ignition.RoleWorkerJoin, DefaultKubernetesVersion, nil)
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr)
	assert.Equal(t, ignition.Entry(ignition.PartFile, 0, ignition.FileAppend), ierr.Place)

	spec.Platform = cabpiv1.PlatformAWS
	_, err = RenderOffline(t.Context(), spec, ignition.RoleWorkerJoin, DefaultKubernetesVersion, nil)
	require.NoError(t, err)
}

// CAPD writes only inline file contents: a Kubernetes source that downloads is refused for
// platform docker, at spec.kubernetes.source; the image source and other platforms render.
func TestDownloadingKubernetesSourceRefusedForCAPD(t *testing.T) {
	for _, source := range []cabpiv1.KubernetesSource{cabpiv1.KubernetesSourceSysext, cabpiv1.KubernetesSourceBinaries} {
		t.Run(string(source), func(t *testing.T) {
			spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformDocker, Kubernetes: cabpiv1.KubernetesSpec{Source: source,
				DigestsFrom: &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: "mirror", Key: "SHA256SUMS"}}}}
			_, err := RenderOffline(t.Context(), spec, ignition.RoleWorkerJoin, DefaultKubernetesVersion, nil)
			var ierr *ignition.Error
			require.ErrorAs(t, err, &ierr)
			assert.Equal(t, ignition.At(ignition.PartKubernetes, ignition.KubernetesSource), ierr.Place)

			spec.Platform = cabpiv1.PlatformOpenStack
			_, err = RenderOffline(t.Context(), spec, ignition.RoleWorkerJoin, DefaultKubernetesVersion, nil)
			require.NoError(t, err)
		})
	}
	spec := &cabpiv1.IgnitionConfigSpec{Platform: cabpiv1.PlatformDocker, Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage}}
	_, err := RenderOffline(t.Context(), spec, ignition.RoleWorkerJoin, DefaultKubernetesVersion, nil)
	require.NoError(t, err)
}
