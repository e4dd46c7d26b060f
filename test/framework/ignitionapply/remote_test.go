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

package ignitionapply

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Only remote sources at addresses of the suite's own network are fetched: anything else (another
// network, a host name that would need DNS, another scheme) is refused before ignition-apply runs,
// in the config and in a config it carries compressed.
func TestCheckRemoteSources(t *testing.T) {
	prefix := netip.MustParsePrefix("10.213.87.0/24")
	file := func(source string) string {
		return fmt.Sprintf(`{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/x","contents":{"source":%q}}]}}`, source)
	}
	wrapped := func(inner string) string {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write([]byte(inner))
		_ = zw.Close()
		return fmt.Sprintf(`{"ignition":{"version":"3.3.0","config":{"replace":{"source":"data:;base64,%s","compression":"gzip"}}}}`,
			base64.StdEncoding.EncodeToString(gz.Bytes()))
	}
	for _, tc := range []struct {
		name, config string
		ok           bool
	}{
		{"data URL", file("data:,hello"), true},
		{"http in the prefix", file("http://10.213.87.1:8080/release/v1.34.4/bin/linux/amd64/kubeadm"), true},
		{"https in the prefix", file("https://10.213.87.1/x"), true},
		{"another network", file("http://10.0.0.1/x"), false},
		{"a host name", file("https://dl.k8s.io/release/v1.34.4/bin/linux/amd64/kubeadm"), false},
		{"another scheme", file("tftp://10.213.87.1/x"), false},
		{"wrapped, in the prefix", wrapped(file("http://10.213.87.1/x")), true},
		{"wrapped, outside", wrapped(file("https://extensions.flatcar.org/extensions/x.raw")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRemoteSources([]byte(tc.config), prefix)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}
