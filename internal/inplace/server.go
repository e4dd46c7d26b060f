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

package inplace

import (
	"crypto/tls"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
)

// Handler names: Cluster API registers each as <name>.<ExtensionConfig name>. There is no
// CanUpdateMachine handler: only KubeadmControlPlane calls that hook, for control-plane
// Machines, which cabpi never updates in place; registering it would take the one slot Cluster
// API allows from a control plane's own extension, and stall control-plane rollouts while cabpi
// is down (the hooks' failure policy is Fail) for nothing (docs/adr/038).
const (
	CanUpdateMachineSetHandler = "can-update-machineset"
	UpdateMachineHandler       = "update-machine"
)

// ServerOptions are where the extension is served: its own HTTPS port, with a certificate of
// its own (the ExtensionConfig's CA is injected from it).
type ServerOptions struct {
	// Host is the address to listen on; empty: every address (in a Pod).
	Host    string
	Port    int
	CertDir string
	// ClientCAName names a PEM CA bundle in CertDir: when set, a caller must present a client
	// certificate it signs (Cluster API's core manager, with --runtime-extension-client-cert-file
	// and --runtime-extension-client-key-file), or the TLS handshake fails (docs/adr/040).
	ClientCAName string
	TLSOpts      []func(*tls.Config)
}

// AddToManager serves h's hooks with Cluster API's Runtime SDK server, run by mgr (every replica
// serves: the hooks read and write only what the workload cluster shows, so any replica may
// answer).
func AddToManager(mgr ctrl.Manager, h *Handlers, opts ServerOptions) error {
	catalog := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(catalog); err != nil {
		return fmt.Errorf("building the Runtime SDK catalog: %w", err)
	}
	srv, err := server.New(server.Options{Catalog: catalog, Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir,
		ClientCAName: opts.ClientCAName, TLSOpts: opts.TLSOpts})
	if err != nil {
		return fmt.Errorf("creating the update extension's server: %w", err)
	}
	// UpdateMachine's answers may need to read the workload cluster twice and write a Job: more
	// than the default 10 s on a slow link. The CanUpdate hooks read only the management cluster.
	updateTimeout := int32(30)
	for _, handler := range []server.ExtensionHandler{
		{Hook: runtimehooksv1.CanUpdateMachineSet, Name: CanUpdateMachineSetHandler, HandlerFunc: h.DoCanUpdateMachineSet},
		{Hook: runtimehooksv1.UpdateMachine, Name: UpdateMachineHandler, HandlerFunc: h.DoUpdateMachine, TimeoutSeconds: &updateTimeout},
	} {
		if err := srv.AddExtensionHandler(handler); err != nil {
			return fmt.Errorf("adding the %s handler: %w", handler.Name, err)
		}
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the update extension's server to the manager: %w", err)
	}
	return nil
}
