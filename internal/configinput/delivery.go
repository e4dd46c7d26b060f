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
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Delivery is how the owner's infrastructure machine hands the bootstrap data to its instance.
// The kind names the platform; for Cluster API Provider AWS (CAPA) the machine's spec also says
// where the data is stored, which decides the limit the data is rendered against and which
// Ignition versions can boot it (docs/adr/028-delivery-by-infrastructure-machine.md).
type Delivery struct {
	// Kind is the infrastructure machine's kind (the owner's spec.infrastructureRef.kind);
	// "" when not known (admission; `cabpi render` of a file that does not also hold the
	// config's owner and its infrastructure machine or machine template).
	Kind string
	// Name is the infrastructure object's name; "" when not read.
	Name string
	// Object is the infrastructure object as messages name it ("AWSMachineTemplate demo-md-0");
	// "" when not read.
	Object string
	// Storage is where the data goes.
	Storage Storage
	// StubIgnitionVersion is the Ignition spec version of the stub CAPA writes into the user
	// data when the data itself is in S3 (StorageObjectStore), as CAPA's spec.ignition.version
	// takes it ("2.3", "3.4").
	StubIgnitionVersion string
}

// Storage is where an infrastructure provider puts the bootstrap data.
type Storage string

const (
	// StorageUserData: the data is the instance's user data (custom data, metadata value,
	// guestinfo), under the platform's limit. The default of every kind.
	StorageUserData Storage = ""
	// StorageObjectStore: the data is an object in the cluster's object store (CAPA's S3
	// bucket, AWSCluster spec.s3Bucket) and the user data is the provider's small Ignition stub
	// that fetches it: no user-data limit applies to the data.
	StorageObjectStore Storage = "ObjectStore"
)

// CAPA's Ignition settings (sigs.k8s.io/cluster-api-provider-aws/v2 api/v1beta2, v2.13):
// spec.ignition.storageType and spec.ignition.version of AWSMachine and AWSMachinePool. The
// defaults are CAPA's (infrav1.DefaultIgnitionVersion, DefaultIgnitionStorageType,
// DefaultMachinePoolIgnitionStorageType); test/providers/aws checks them against CAPA's code.
const (
	capaStorageObjectStore       = "ClusterObjectStore"
	capaStorageUnencrypted       = "UnencryptedUserData"
	capaDefaultIgnitionVersion   = "2.3"
	capaIgnitionVersionFieldPath = "spec.ignition.version"
)

// capaSpecPaths are the CAPA kinds whose spec says where the data goes, and where their
// spec.ignition is. A machine without spec.ignition keeps the data in S3 (AWSMachine) or in the
// user data (AWSMachinePool, for compatibility: CAPA's launch templates had only that).
var capaSpecPaths = map[string]struct {
	ignition       []string
	defaultStorage Storage
}{
	"AWSMachine":         {[]string{"spec", "ignition"}, StorageObjectStore},
	"AWSMachineTemplate": {[]string{"spec", "template", "spec", "ignition"}, StorageObjectStore},
	"AWSMachinePool":     {[]string{"spec", "ignition"}, StorageUserData},
}

// DeliveryNeedsSpec reports whether the delivery of kind depends on the machine's spec (it is
// read then); for any other kind the kind alone says it.
func DeliveryNeedsSpec(kind string) bool {
	_, ok := capaSpecPaths[kind]
	return ok
}

// DeliveryOf reads how an infrastructure machine (or machine template, which stands for its
// machines' kind) hands the data over: its kind, and for CAPA's kinds spec.ignition's
// storageType and version with CAPA's defaults.
func DeliveryOf(obj *unstructured.Unstructured) (Delivery, error) {
	kind := obj.GetKind()
	d := Delivery{Kind: kind, Name: obj.GetName(), Object: kind + " " + obj.GetName()}
	// A machine template (`cabpi render` of a generated cluster) stands for its machines.
	if machine := strings.TrimSuffix(kind, "Template"); machine != kind && PlatformForKind(machine) != "" {
		d.Kind = machine
	}
	paths, ok := capaSpecPaths[kind]
	if !ok {
		return d, nil
	}
	ignition, found, err := unstructured.NestedMap(obj.Object, paths.ignition...)
	if err != nil {
		return d, fmt.Errorf("%s %s: %s: %w", d.Kind, d.Name, strings.Join(paths.ignition, "."), err)
	}
	if !found {
		d.Storage = paths.defaultStorage
		if d.Storage == StorageObjectStore {
			d.StubIgnitionVersion = capaDefaultIgnitionVersion
		}
		return d, nil
	}
	storage, _, err := unstructured.NestedString(ignition, "storageType")
	if err != nil {
		return d, fmt.Errorf("%s %s: spec.ignition.storageType: %w", d.Kind, d.Name, err)
	}
	switch storage {
	case capaStorageObjectStore, "": // "" only where CAPA's CRD default was not applied
		d.Storage = StorageObjectStore
	case capaStorageUnencrypted:
		d.Storage = StorageUserData
		return d, nil
	default:
		return d, fmt.Errorf("%s %s: spec.ignition.storageType %q is not one CAPA knows (%s, %s)",
			d.Kind, d.Name, storage, capaStorageObjectStore, capaStorageUnencrypted)
	}
	version, _, err := unstructured.NestedString(ignition, "version")
	if err != nil {
		return d, fmt.Errorf("%s %s: %s: %w", d.Kind, d.Name, capaIgnitionVersionFieldPath, err)
	}
	if version == "" {
		version = capaDefaultIgnitionVersion
	}
	d.StubIgnitionVersion = version
	return d, nil
}

// Platform is the platform of the delivery's kind ("" when not known).
func (d Delivery) Platform() cabpiv1.Platform { return PlatformForKind(d.Kind) }

// userDataLimit is the limit the data is rendered against on platform p: none when the data is
// in an object store (the user data is the provider's stub), else the platform's.
func (d Delivery) userDataLimit(p cabpiv1.Platform) int {
	if d.Storage == StorageObjectStore {
		return 0
	}
	return UserDataLimit(p)
}

// DeliveryError says the infrastructure machine would hand the data over in a way the config's
// variant cannot boot. Nothing is stored: the condition says what to change, on the machine.
type DeliveryError struct {
	Delivery Delivery
	Message  string
}

func (e *DeliveryError) Error() string { return e.Message }

// CheckDelivery refuses data the delivery would break: CAPA's Ignition 2.x stub in front of a
// Fedora CoreOS config (Fedora CoreOS's Ignition reads spec 3 only, so the machine would never
// boot). Flatcar's Ignition reads spec 2 configs and follows them to the spec 3 data.
func CheckDelivery(spec *cabpiv1.IgnitionConfigSpec, d Delivery) error {
	if d.Storage != StorageObjectStore || Variant(spec) != cabpiv1.VariantFCOS {
		return nil
	}
	major, err := strconv.Atoi(strings.SplitN(d.StubIgnitionVersion, ".", 2)[0])
	if err == nil && major >= 3 {
		return nil
	}
	what := d.Object
	if what == "" {
		what = "the " + d.Kind
	}
	return &DeliveryError{Delivery: d, Message: fmt.Sprintf(
		"%s keeps the bootstrap data in S3 (spec.ignition.storageType %s) and gives the instance CAPA's Ignition stub of version %q "+
			"(%s; CAPA's default is %s): Fedora CoreOS reads Ignition spec 3 only and would never boot. "+
			"Set %s to \"3.4\" (any 3.x), or storageType %s, in the machine's template "+
			"(a new AWSMachineTemplate for a MachineDeployment: CAPA does not change an AWSMachine's spec)",
		what, capaStorageObjectStore, d.StubIgnitionVersion, capaIgnitionVersionFieldPath, capaDefaultIgnitionVersion,
		capaIgnitionVersionFieldPath, capaStorageUnencrypted)}
}
