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

package provider

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Setup registers the provider's reconcilers on a manager, with the Instances they run.
func Setup(mgr ctrl.Manager, instances *Instances) error {
	opts := controller.Options{MaxConcurrentReconciles: 4}
	if err := (&ClusterReconciler{Client: mgr.GetClient(), Instances: instances}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if err := (&MachineReconciler{Client: mgr.GetClient(), Instances: instances}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	return (&MachinePoolReconciler{Client: mgr.GetClient(), Instances: instances}).SetupWithManager(mgr, opts)
}
