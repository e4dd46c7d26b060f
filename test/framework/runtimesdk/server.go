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

package runtimesdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/exp/runtime/server"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv/freeport"
)

// Extension is a test's Runtime Extension: Cluster API's extension server
// (sigs.k8s.io/cluster-api/exp/runtime/server) serving handlers on a loopback port with a
// self-signed certificate for 127.0.0.1.
type Extension struct {
	// URL is https://127.0.0.1:<port>, CABundle the serving certificate (PEM): what
	// ExtensionConfigFor takes.
	URL      string
	CABundle []byte

	cancel context.CancelFunc
	done   chan error
	dir    string
}

// StartExtension serves handlers until Stop (or until ctx is done) and returns once the server
// answers.
func StartExtension(ctx context.Context, handlers ...server.ExtensionHandler) (_ *Extension, retErr error) {
	dir, err := os.MkdirTemp("", "runtimesdk-extension-")
	if err != nil {
		return nil, fmt.Errorf("runtimesdk: extension: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	caBundle, err := WriteServingCert(dir, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	port, err := FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	catalog := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(catalog); err != nil {
		return nil, fmt.Errorf("runtimesdk: extension: building the hook catalog: %w", err)
	}
	srv, err := server.New(server.Options{Catalog: catalog, Host: "127.0.0.1", Port: port, CertDir: dir})
	if err != nil {
		return nil, fmt.Errorf("runtimesdk: extension: %w", err)
	}
	for _, h := range handlers {
		if err := srv.AddExtensionHandler(h); err != nil {
			return nil, fmt.Errorf("runtimesdk: extension: handler %q: %w", h.Name, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &Extension{
		URL:      "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		CABundle: caBundle,
		cancel:   cancel,
		done:     make(chan error, 1),
		dir:      dir,
	}
	go func() { e.done <- srv.Start(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-e.done:
			e.done <- err // for Stop
			return false, fmt.Errorf("server exited: %w", err)
		default:
		}
		return srv.StartedChecker()(nil) == nil, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("runtimesdk: extension did not start: %w", err), e.Stop())
	}
	return e, nil
}

// Stop shuts the server down (waiting for calls in flight) and removes its certificate.
func (e *Extension) Stop() error {
	e.cancel()
	err := <-e.done
	e.done <- err // Stop may be called again
	return errors.Join(err, os.RemoveAll(e.dir))
}

// FreeLoopbackPort is a loopback port nothing listens on, and that nothing else takes before a
// server of the caller's listens on it (the extension server takes a port number, not a
// listener): see package freeport.
func FreeLoopbackPort() (int, error) {
	port, err := freeport.Loopback()
	if err != nil {
		return 0, fmt.Errorf("runtimesdk: finding a free port: %w", err)
	}
	return port, nil
}
