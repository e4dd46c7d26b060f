// Package manager is cabpi's manager command: it parses the command line and runs the manager
// wired by internal/setup until it is signalled to stop.
package manager

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
)

// Main parses args and runs the manager.
func Main(args []string) error {
	opts, zapOpts, err := setup.ParseCommandLine(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	return setup.Run(ctrl.SetupSignalHandler(), cfg, opts)
}
