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

// Package inplace_test runs Cluster API's in-place update machinery in-process against cabpi's
// update extension: Cluster API's RuntimeSDK and InPlaceUpdates feature gates on, its
// ExtensionConfig reconciler discovering extensions through the suites' Runtime SDK client
// (test/framework/runtimesdk), and its Machine, MachineSet and MachineDeployment reconcilers
// given that client, as a management cluster started with those gates runs them. cabpi is
// registered as the binary registers it (internal/setup), its update extension served on a
// loopback port with a certificate of the suite's.
package inplace_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	timeout = 30 * time.Second
	tick    = 100 * time.Millisecond

	// cabpiExtensionConfig names the ExtensionConfig of cabpi's update extension.
	cabpiExtensionConfig = "cabpi"
	// updateImage is what the update Jobs would run: none runs here.
	updateImage = "example.invalid/cabpi:test"
	// updatePullSecret is the Secret the update Jobs pull it with (--update-image-pull-secrets).
	updatePullSecret = "regcred"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// The extension's serving certificate (tls.crt, tls.key), for 127.0.0.1: the manager serves
	// the extension with its webhook certificate directory.
	certDir, err := os.MkdirTemp("", "inplace-extension-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(certDir)
	caBundle, err := runtimesdk.WriteServingCert(certDir, "127.0.0.1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port, err := runtimesdk.FreeLoopbackPort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	return testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			InPlaceUpdates: true,
			// Their set-up refuses the InPlaceUpdates gate without a RuntimeClient: running
			// them checks they get one.
			MachineController:           true,
			MachineSetController:        true,
			MachineDeploymentController: true,
		},
		Keep: []**testenv.Environment{&env},
		Setup: func(e *testenv.Environment) error {
			opts := testenv.CabpiOptions()
			opts.UpdateExtensionPort, opts.UpdateExtensionHost = port, "127.0.0.1"
			opts.UpdateImage = updateImage
			opts.UpdateImagePullSecrets = []string{updatePullSecret}
			opts.WebhookCertDir = certDir
			if err := e.SetupCabpi(opts); err != nil {
				return err
			}
			// Created before the Manager starts, as the e2e suite creates its own: Cluster API's
			// warm-up discovers it while cabpi's extension server starts in the same Manager.
			ec := runtimesdk.ExtensionConfigFor(cabpiExtensionConfig, fmt.Sprintf("https://127.0.0.1:%d", port), caBundle)
			if err := e.Client.Create(context.Background(), ec); err != nil {
				return fmt.Errorf("creating ExtensionConfig %s: %w", cabpiExtensionConfig, err)
			}
			return nil
		},
	})
}
