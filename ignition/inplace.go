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
	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// CheckInPlace checks that a node whose Kubernetes comes from k can be moved in place to
// version, as first boot checks k and version (the same rules: a version the source's layout
// has, a base URL that can be fetched from); source image has nothing to swap in place, since
// kubeadm and the kubelet are part of the OS image. The errors are *Error (a *Report when there
// are several), placed as the renderer places them. The update itself is package nodeupdate's.
func CheckInPlace(k cabpiv1.KubernetesSpec, version string) error {
	if kubernetesSource(k) == cabpiv1.KubernetesSourceImage {
		return errorf(ErrInvalidInput, At(PartKubernetes, KubernetesSource),
			"source image: kubeadm and the kubelet are part of the OS image, so there is nothing to swap in place; "+
				"the node has to be replaced with an image of the new version")
	}
	// The variant only matters to the bakery's default images on Fedora CoreOS, which a node
	// that booted with this spec does not have: Flatcar's rules are the rest of the checks.
	if errs := checkKubernetes(cabpiv1.VariantFlatcar, k, version); len(errs) > 0 {
		return &Report{Errors: errs}
	}
	return nil
}
