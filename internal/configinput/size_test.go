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

package configinput_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// The size targets of issue 12, against CABPK's `format: ignition` output for the same spec and
// cluster (measured there): a default worker no larger than CABPK's 1,474 bytes, a
// control-plane init with its 4 generated key pairs at most 0.8 × 14,204 bytes, and every one
// under AWS's 16 KiB, where the data may be compressed (any platform but docker); CAPD's
// uncompressed data is logged for comparison and must fit AWS's limit too.
//
// Every config carries the finishing of an interrupted first boot (docs/adr/034), which CABPK's
// does not: the worker and wrapped-init targets allow it a budget each (measured: 675 bytes on
// a default worker, whose script carries no control plane's step, 290 on a wrapped init), so
// that growth beyond it fails here as any other would. The unwrapped init and CAPD's data meet
// their targets without it.
//
// The init target is met only by the wrapper, which is used over a platform's limit: file by
// file, PEM text (base64 with newlines) costs as much gzipped and base64-encoded as
// percent-escaped, and the 8 PEM files alone are about 10.4 kB. Without a limit to force the
// wrapper, init stays smaller than CABPK's but above 0.8 of it (docs/adr/011). Fedora CoreOS
// configs are wrapped only from Ignition 3.1.0: its default, 3.0.0, cannot be.
func TestSizeTargets(t *testing.T) {
	const (
		cabpkWorker = 1474
		cabpkInit   = 14204
		awsLimit    = 16 << 10
		// What ADR 034's recovery may add to the targets measured against CABPK.
		workerRecoveryBudget = 700
		initRecoveryBudget   = 350
	)
	for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
		spec := &cabpiv1.IgnitionConfigSpec{Variant: variant}
		for _, role := range []ignition.Role{ignition.RoleWorkerJoin, ignition.RoleInit} {
			cluster := configinput.Placeholders(spec, role)
			cluster.Name, cluster.ControlPlaneEndpoint = "demo", "demo-apiserver.example.com:6443"
			if role == ignition.RoleInit {
				// Real key pairs, as the controller generates them: key material does not compress.
				cluster.Certificates = configinput.CertificatesFor(spec, role)
				require.NoError(t, cluster.Certificates.Generate())
			}
			for _, kind := range []string{"AWSMachine", "DockerMachine"} {
				cluster.Delivery = configinput.Delivery{Kind: kind}
				in, err := configinput.Build(context.Background(), spec, role, configinput.DefaultKubernetesVersion, cluster, configinput.OfflineResolver{})
				require.NoError(t, err)
				out, err := ignition.Render(in)
				require.NoError(t, err)
				t.Logf("%-7s %-6s %-13s %6d bytes (%d gzipped, wrapped %v)", variant, role, kind, out.Size.Bytes, out.Size.GzipBytes, out.Size.Wrapped)
				assert.Less(t, out.Size.Bytes, awsLimit)
				if kind == "DockerMachine" {
					continue
				}
				if role == ignition.RoleWorkerJoin {
					assert.LessOrEqual(t, out.Size.Bytes, cabpkWorker+workerRecoveryBudget, "default worker")
					continue
				}
				assert.Less(t, out.Size.Bytes, cabpkInit, "init with 4 key pairs")
				// Fedora CoreOS's floor, 3.0.0, has no compressed config reference: pinned to 3.1.0.
				in.SizeLimit = cabpkInit*8/10 + initRecoveryBudget
				if variant == cabpiv1.VariantFCOS {
					in.IgnitionVersion = "3.1.0"
				}
				wrapped, err := ignition.Render(in)
				require.NoError(t, err)
				t.Logf("%-7s %-6s %-13s %6d bytes wrapped", variant, role, kind, wrapped.Size.Bytes)
				assert.True(t, wrapped.Size.Wrapped)
				assert.False(t, wrapped.Size.OverLimit(), "init with 4 key pairs, wrapped: %d bytes", wrapped.Size.Bytes)
			}
		}
	}
}
