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
	"fmt"
	"slices"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// Platforms are the values of spec.platform, in the CRD's order. Each call returns a new slice:
// the list is the API's, not the caller's to change.
func Platforms() []cabpiv1.Platform {
	return []cabpiv1.Platform{
		cabpiv1.PlatformAWS, cabpiv1.PlatformAzure, cabpiv1.PlatformGCP, cabpiv1.PlatformHetzner,
		cabpiv1.PlatformOpenStack, cabpiv1.PlatformVSphere, cabpiv1.PlatformDocker,
	}
}

// userDataLimits are the platforms' user-data limits in raw bytes (the data as stored, before
// any encoding the infrastructure provider adds). OpenStack's is Nova's: CAPO hands it the data
// base64-encoded, and Nova's API schema takes at most 65,535 characters of user_data, which are
// 49,149 bytes of data (4 characters for every 3 bytes; 48 KiB would be 65,536 characters, one
// over; test/providers/openstack). Azure's custom data decodes to at most 65,535 bytes (the ARM API's
// osProfile.customData), GCP's is the 256 KiB of one metadata value (the user-data key CAPG
// writes). Docker has none: CAPD reads the Secret. Where the data is not in the user data at
// all (CAPA's S3), none applies (Delivery).
var userDataLimits = map[cabpiv1.Platform]int{
	cabpiv1.PlatformAWS:       16 << 10,
	cabpiv1.PlatformHetzner:   32 << 10,
	cabpiv1.PlatformOpenStack: 65535 / 4 * 3,
	cabpiv1.PlatformAzure:     64<<10 - 1,
	cabpiv1.PlatformVSphere:   64 << 10,
	cabpiv1.PlatformGCP:       256 << 10,
}

// infrastructureKinds are the machine kinds of the Cluster API infrastructure providers that
// hand a bootstrap data Secret to a machine, by platform.
var infrastructureKinds = map[string]cabpiv1.Platform{
	"AWSMachine":              cabpiv1.PlatformAWS,
	"AWSMachinePool":          cabpiv1.PlatformAWS,
	"AWSManagedMachinePool":   cabpiv1.PlatformAWS,
	"AzureMachine":            cabpiv1.PlatformAzure,
	"AzureMachinePool":        cabpiv1.PlatformAzure,
	"GCPMachine":              cabpiv1.PlatformGCP,
	"HCloudMachine":           cabpiv1.PlatformHetzner,
	"HetznerBareMetalMachine": cabpiv1.PlatformHetzner,
	"OpenStackMachine":        cabpiv1.PlatformOpenStack,
	"VSphereMachine":          cabpiv1.PlatformVSphere,
	"VSphereVM":               cabpiv1.PlatformVSphere,
	"DockerMachine":           cabpiv1.PlatformDocker,
	"DockerMachinePool":       cabpiv1.PlatformDocker,
	"DevMachine":              cabpiv1.PlatformDocker,
}

// PlatformForKind is the platform of an infrastructure machine kind (the owner's
// spec.infrastructureRef.kind), "" for a kind not known.
func PlatformForKind(kind string) cabpiv1.Platform {
	return infrastructureKinds[kind]
}

// EffectivePlatform is the platform the data of spec is rendered for: spec.platform, else the
// platform of the owner's infrastructure kind, else "" (not known: no limit, compressed). The
// controller logs it with the rendered size.
func EffectivePlatform(spec *cabpiv1.IgnitionConfigSpec, infrastructureKind string) cabpiv1.Platform {
	if spec.Platform != "" {
		return spec.Platform
	}
	return PlatformForKind(infrastructureKind)
}

// UserDataLimit is the platform's user-data limit in raw bytes, 0 for none (docker, or a
// platform not known).
func UserDataLimit(p cabpiv1.Platform) int {
	return userDataLimits[p]
}

// Compressible reports whether the platform's reader of the data decompresses: all do but
// CAPD's (docs/adr/011). An unknown platform is taken to be a real machine's Ignition.
func Compressible(p cabpiv1.Platform) bool {
	return p != cabpiv1.PlatformDocker
}

// applyPlatform sets what the platform means for rendering, and records in in.Findings what
// the platform's machines cannot read. CAPD reads files with Ignition 2.3 types, in which append
// is a flag, not a list: it cannot read an appended file (docs/adr/010). A node named from a
// metadata service must run on a platform that has that service.
func applyPlatform(in *ignition.Input, p cabpiv1.Platform, d Delivery) {
	in.Compress, in.SizeLimit = Compressible(p), d.userDataLimit(p)
	if nn := in.NodeName; nn != nil && p != "" && metadataPlatformOf(p) != nn.Platform {
		in.Findings = append(in.Findings, &ignition.Error{Kind: ignition.ErrInvalidInput,
			Place: ignition.At(ignition.PartNodeName, ignition.NodeNamePlatform), Value: string(nn.Platform),
			Message: fmt.Sprintf("the node is named from the %s metadata service, and platform %s (%s) has none: "+
				"the node would wait for it at every boot; set nodeName.fromMetadata to the machine's own platform, or leave nodeName unset",
				nn.Platform, p, platformOrigin(d))})
	}
	if p != cabpiv1.PlatformDocker {
		return
	}
	// CAPD writes only the inline contents of files: it downloads nothing and links nothing.
	if src := in.Kubernetes.Source; src != "" && src != cabpiv1.KubernetesSourceImage {
		in.Findings = append(in.Findings, &ignition.Error{Kind: ignition.ErrInvalidInput,
			Place: ignition.At(ignition.PartKubernetes, ignition.KubernetesSource), Value: string(src),
			Message: fmt.Sprintf("CAPD (platform docker) writes only inline file contents and downloads nothing: source %s cannot work there; "+
				"use source image (CAPD's kindest/node images have kubeadm and the kubelet)", src)})
	}
	for i, f := range in.Files {
		if f.Append {
			in.Findings = append(in.Findings, &ignition.Error{Kind: ignition.ErrInvalidInput,
				Place: ignition.Entry(ignition.PartFile, i, ignition.FileAppend), Value: f.Append,
				Message: "CAPD (platform docker) cannot read Ignition's append: write the whole file, or append in a preKubeadmCommand"})
		}
	}
}

// metadataPlatformOf is the metadata service a platform's machines have that can name a node
// (nodeName.fromMetadata), "" for none cabpi reads.
func metadataPlatformOf(p cabpiv1.Platform) cabpiv1.MetadataPlatform {
	switch p {
	case cabpiv1.PlatformAWS:
		return cabpiv1.MetadataPlatformAWS
	case cabpiv1.PlatformAzure:
		return cabpiv1.MetadataPlatformAzure
	case cabpiv1.PlatformOpenStack:
		return cabpiv1.MetadataPlatformOpenStack
	}
	return ""
}

// platformOrigin says where the platform was taken from, for messages.
func platformOrigin(d Delivery) string {
	if d.Kind != "" {
		return "spec.platform, or the infrastructure machine's kind " + d.Kind
	}
	return "spec.platform"
}

// ParsePlatform reads a platform name as spec.platform takes it.
func ParsePlatform(name string) (cabpiv1.Platform, error) {
	p := cabpiv1.Platform(name)
	known := Platforms()
	if !slices.Contains(known, p) {
		names := make([]string, len(known))
		for i, p := range known {
			names[i] = string(p)
		}
		return "", fmt.Errorf("unknown platform %q; use one of %s", name, strings.Join(names, ", "))
	}
	return p, nil
}

// OverPlatformLimit says why rendered data does not fit the platform's user data, and what to
// do about it, or "" when it fits (or the platform has no limit). out.Size.Limit is the limit
// the data was rendered against; platform names it.
func OverPlatformLimit(out ignition.Output, platform cabpiv1.Platform) string {
	size := out.Size
	if !size.OverLimit() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the bootstrap data is %d bytes, over the %d-byte user-data limit of platform %s", size.Bytes, size.Limit, platform)
	switch {
	case size.Wrapped:
		fmt.Fprintf(&b, ", although it is compressed: files gzipped where smaller and the whole config (%d bytes) wrapped gzipped", size.UnwrappedBytes)
	case size.Compressed && out.SpecVersion == "3.0.0":
		b.WriteString(", although files are gzipped where smaller; Ignition 3.0.0 cannot carry a compressed config, " +
			"so pinning spec.ignitionVersion to 3.1.0 or later would let it be wrapped gzipped")
	case size.Compressed:
		b.WriteString(", although it is compressed: files gzipped where smaller (a gzipped wrapper would not be smaller)")
	default:
		b.WriteString(" (not compressed: the platform's reader does not decompress)")
	}
	b.WriteString(". Nothing was cut. Make the Butane snippet or spec.files smaller, or have large files fetched at boot " +
		"(Butane contents.source with an https URL)")
	if platform == cabpiv1.PlatformAWS {
		b.WriteString("; on AWS, let CAPA store the data in S3, which hands the instance a small stub instead: AWSMachine " +
			"spec.ignition.storageType ClusterObjectStore (its default) with spec.ignition.version 3.4, and AWSCluster spec.s3Bucket")
	}
	return b.String()
}
