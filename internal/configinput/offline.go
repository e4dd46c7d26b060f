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
	"context"
	"fmt"
	"io"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// DefaultKubernetesVersion is the version rendered for when none is known (cabpi render without
// --kubernetes-version, admission of a config whose owner is not known yet).
const DefaultKubernetesVersion = "v1.34.0"

// OfflineResolver resolves references without a cluster: a file's Secret content becomes a
// placeholder (noted on Warn); a Butane document or Container Linux Config from a Secret or
// ConfigMap cannot be read and is an error. spec.kubernetes.digestsFrom reads Digests (cabpi
// render --digests); without them, a download with no digest known is pinned to a stand-in
// (noted on Warn).
type OfflineResolver struct {
	Warn    io.Writer
	Digests []byte
}

// DigestsStandIn says the digests of spec.kubernetes.digestsFrom stand in: none were given.
func (o OfflineResolver) DigestsStandIn() bool {
	if o.Digests == nil && o.Warn != nil {
		fmt.Fprintln(o.Warn, "warning: spec.kubernetes.digestsFrom is not read offline (give its list with --digests): a download with no digest known is pinned to a stand-in")
	}
	return o.Digests == nil
}

func (o OfflineResolver) SecretKey(_ context.Context, field RefField, ref cabpiv1.KeyReference) ([]byte, error) {
	if field.Digests() {
		return o.Digests, nil
	}
	if field.Document() {
		return nil, fmt.Errorf("%s: rendering offline cannot read Secret %q; put the %s inline to preview it", field, ref.Name, documentName(field.Part))
	}
	if o.Warn != nil {
		fmt.Fprintf(o.Warn, "warning: %s: Secret %s key %s replaced by a placeholder\n", field, ref.Name, ref.Key)
	}
	return fmt.Appendf(nil, "placeholder: Secret %s key %s\n", ref.Name, ref.Key), nil
}

// Placeholders says the Secret content it gives stands in for the real one.
func (o OfflineResolver) Placeholders() bool { return true }

func (o OfflineResolver) ConfigMapKey(_ context.Context, field RefField, ref cabpiv1.KeyReference) (string, error) {
	if field.Digests() {
		return string(o.Digests), nil
	}
	return "", fmt.Errorf("%s: rendering offline cannot read ConfigMap %q; put the %s inline to preview it", field, ref.Name, documentName(field.Part))
}

// documentName is how messages call the document of part, "" for a part that is not one.
func documentName(part ignition.Part) string {
	switch part {
	case ignition.PartButane:
		return "Butane"
	case ignition.PartContainerLinuxConfig:
		return "Container Linux Config"
	}
	return ""
}

// Offline builds the input of spec for role and version with placeholder credentials, the way
// the controller would with a real cluster.
func Offline(ctx context.Context, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, res Resolver) (ignition.Input, error) {
	return Build(ctx, spec, role, version, Placeholders(spec, role), res)
}
