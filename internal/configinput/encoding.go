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
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// maxDecodedFileBytes bounds what a gzip file content may expand to. The rendered data must
// fit a 1 MiB Secret, gzipped contents included: more than this cannot be carried however it
// compresses, and a small gzip bomb must not exhaust the manager's (or the webhook's) memory.
const maxDecodedFileBytes = 8 << 20

// decodeFileContent decodes a file's content as KubeadmConfig's files encoding says: base64,
// gzip or gzip+base64; plain text when empty.
func decodeFileContent(content []byte, encoding cabpiv1.FileEncoding) ([]byte, error) {
	switch encoding {
	case "":
		return content, nil
	case cabpiv1.FileEncodingBase64:
		return decodeBase64(content)
	case cabpiv1.FileEncodingGzip:
		return gunzip(content)
	case cabpiv1.FileEncodingGzipBase64:
		raw, err := decodeBase64(content)
		if err != nil {
			return nil, err
		}
		return gunzip(raw)
	}
	return nil, fmt.Errorf("encoding %q is not one of base64, gzip, gzip+base64", encoding)
}

func decodeBase64(content []byte) ([]byte, error) {
	// Encoders wrap lines (base64 -w 76, openssl): whitespace is not data.
	compact := bytes.Join(bytes.Fields(content), nil)
	out := make([]byte, base64.StdEncoding.DecodedLen(len(compact)))
	n, err := base64.StdEncoding.Decode(out, compact)
	if err != nil {
		return nil, fmt.Errorf("encoding base64: the content is not base64: %w", err)
	}
	return out[:n], nil
}

func gunzip(content []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(content))
	if err != nil {
		return nil, fmt.Errorf("encoding gzip: the content is not gzip data: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxDecodedFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("encoding gzip: the content does not decompress: %w", err)
	}
	if len(out) > maxDecodedFileBytes {
		return nil, errors.New("encoding gzip: the content decompresses to more than 8 MiB, more than bootstrap data can carry")
	}
	return out, nil
}
