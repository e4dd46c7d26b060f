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

package ignition

import (
	"fmt"
	"slices"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// NodeNameFromMetadata names the node, and optionally sets its provider ID, from the platform's
// metadata service at first boot instead of from nodeRegistration.name.
type NodeNameFromMetadata struct {
	Platform cabpiv1.MetadataPlatform
	// ProviderID also sets the kubelet's --provider-id from the instance's metadata, in the form
	// the platform's Cluster API infrastructure provider puts on the Machine.
	ProviderID bool
}

// hostnameAttribute is the pseudo attribute for the machine's own hostname. bash sets HOSTNAME
// to it; on Azure, whose metadata service has no hostname attribute, it is the VM name.
const hostnameAttribute = "HOSTNAME"

// metadataSource is where one variant reads one platform's attributes at boot.
type metadataSource struct {
	// service writes environmentFile; kubeadm.service requires and orders after it.
	service         string
	environmentFile string
	// nodeName is the attribute holding the node's name.
	nodeName string
	// providerID is the provider ID with attributes as ${NAME} placeholders; "" where the
	// metadata does not carry what the platform's provider ID needs.
	providerID string
	// idAttributes are the attributes providerID uses.
	idAttributes []string
}

// Flatcar runs Afterburn as coreos-metadata.service with the legacy COREOS_ names (and EC2 for
// AWS); Fedora CoreOS runs afterburn.service with AFTERBURN_ names.
var metadataSources = map[cabpiv1.Variant]map[cabpiv1.MetadataPlatform]metadataSource{
	cabpiv1.VariantFlatcar: {
		cabpiv1.MetadataPlatformAWS:       flatcarSource("COREOS_EC2_HOSTNAME", "aws:///%s/%s", "COREOS_EC2_AVAILABILITY_ZONE", "COREOS_EC2_INSTANCE_ID"),
		cabpiv1.MetadataPlatformOpenStack: flatcarSource("COREOS_OPENSTACK_HOSTNAME", "openstack:///%s", "COREOS_OPENSTACK_INSTANCE_UUID"),
		cabpiv1.MetadataPlatformAzure:     flatcarSource(hostnameAttribute, ""),
	},
	cabpiv1.VariantFCOS: {
		cabpiv1.MetadataPlatformAWS:       fcosSource("AFTERBURN_AWS_HOSTNAME", "aws:///%s/%s", "AFTERBURN_AWS_AVAILABILITY_ZONE", "AFTERBURN_AWS_INSTANCE_ID"),
		cabpiv1.MetadataPlatformOpenStack: fcosSource("AFTERBURN_OPENSTACK_HOSTNAME", "openstack:///%s", "AFTERBURN_OPENSTACK_INSTANCE_UUID"),
		cabpiv1.MetadataPlatformAzure:     fcosSource(hostnameAttribute, ""),
	},
}

func flatcarSource(nodeName, providerIDFormat string, idAttributes ...string) metadataSource {
	return newMetadataSource("coreos-metadata.service", "/run/metadata/flatcar", nodeName, providerIDFormat, idAttributes)
}

func fcosSource(nodeName, providerIDFormat string, idAttributes ...string) metadataSource {
	return newMetadataSource("afterburn.service", "/run/metadata/afterburn", nodeName, providerIDFormat, idAttributes)
}

func newMetadataSource(service, file, nodeName, providerIDFormat string, idAttributes []string) metadataSource {
	s := metadataSource{service: service, environmentFile: file, nodeName: nodeName, idAttributes: idAttributes}
	if providerIDFormat != "" {
		args := make([]any, len(idAttributes))
		for i, a := range idAttributes {
			args[i] = placeholder(a)
		}
		s.providerID = fmt.Sprintf(providerIDFormat, args...)
	}
	return s
}

// placeholder is how an attribute stands in the kubeadm configuration until the bootstrap
// script substitutes it (the form users of envsubst already know).
func placeholder(attribute string) string { return "${" + attribute + "}" }

// metadataPlatforms lists the platforms a node can be named from, sorted, for messages.
func metadataPlatforms() []cabpiv1.MetadataPlatform {
	out := make([]cabpiv1.MetadataPlatform, 0, len(metadataSources[cabpiv1.VariantFlatcar]))
	for p := range metadataSources[cabpiv1.VariantFlatcar] {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// metadataFor resolves the input's node-name option; nil without one.
func metadataFor(variant cabpiv1.Variant, nn *NodeNameFromMetadata) (*metadataSource, *Error) {
	if nn == nil {
		return nil, nil
	}
	src, ok := metadataSources[variant][nn.Platform]
	if !ok {
		return nil, errorf(ErrInvalidInput, At(PartNodeName, NodeNamePlatform), "unknown platform %q; supported: %v", nn.Platform, metadataPlatforms())
	}
	if nn.ProviderID && src.providerID == "" {
		return nil, errorf(ErrInvalidInput, At(PartNodeName, NodeNameProviderID),
			"the %s metadata service does not give what its provider ID is made of; leave providerID unset (the cloud provider sets it)", nn.Platform)
	}
	return &src, nil
}

// applyNodeName names the node registration after the metadata placeholders; reg is the
// caller's copy. A name or provider ID the user set as well would be silently overridden on one
// side: refused.
func applyNodeName(reg *kubeadmv1.NodeRegistrationOptions, src *metadataSource, providerID bool, registration Place) *Error {
	if src == nil {
		return nil
	}
	if reg.Name != "" {
		return errorf(ErrInvalidInput, At(PartNodeName),
			"%s.name is set too; use one of %s and %s.name", registration, At(PartNodeName, NodeNamePlatform), registration)
	}
	// The kubelet's own flag names the node as well, and wins over the registration's name:
	// two sources for one name, the same as above.
	if slices.ContainsFunc(reg.KubeletExtraArgs, func(a kubeadmv1.Arg) bool { return a.Name == "hostname-override" }) {
		return errorf(ErrInvalidInput, At(PartNodeName),
			"%s.kubeletExtraArgs sets hostname-override too; use one of %s and the kubelet argument", registration, At(PartNodeName, NodeNamePlatform))
	}
	reg.Name = placeholder(src.nodeName)
	if !providerID {
		return nil
	}
	if slices.ContainsFunc(reg.KubeletExtraArgs, func(a kubeadmv1.Arg) bool { return a.Name == "provider-id" }) {
		at := At(PartNodeName, NodeNameProviderID)
		return errorf(ErrInvalidInput, at,
			"%s.kubeletExtraArgs sets provider-id too; use one of %s and the kubelet argument", registration, at)
	}
	id := src.providerID
	reg.KubeletExtraArgs = append(slices.Clone(reg.KubeletExtraArgs), kubeadmv1.Arg{Name: "provider-id", Value: &id})
	return nil
}

// substitutions lists, for the bootstrap script (scripts/metadata.sh), what to substitute in
// the kubeadm configuration: "name=ATTRIBUTE" for the node name, "id=ATTRIBUTE" for provider ID
// parts. Only these placeholders are replaced, never a blanket envsubst: the file also holds the
// join token and user text. Each value is checked before (a lowercase DNS subdomain for the
// name, a conservative token for ID parts), so it is valid in any YAML scalar, and the file is
// replaced whole with mode 0600, so it is never half-written or readable by others.
func (s *metadataSource) substitutions(providerID bool) []string {
	subs := []string{"name=" + s.nodeName}
	if providerID {
		for _, a := range s.idAttributes {
			subs = append(subs, "id="+a)
		}
	}
	return subs
}
