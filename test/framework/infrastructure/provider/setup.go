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
