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

package workload

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
)

// Etcd is an etcd the suite runs for a cluster whose ClusterConfiguration names an external
// etcd: on the bridge's host address, serving TLS with a certificate of the cluster's etcd CA and
// requiring client certificates of that CA, as an external etcd a user runs would.
type Etcd struct {
	// Endpoint is https://<address>:<port>.
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

// EtcdOptions say where the etcd runs and with what.
type EtcdOptions struct {
	// Dir holds its data, certificates and log; it is created.
	Dir string
	// Address is the bridge's host address: the nodes reach the etcd there.
	Address netip.Addr
	// Bin is the etcd binary.
	Bin string
	// CA is the cluster's etcd CA (its key signs the etcd's serving certificate).
	CA *secret.Certificate
}

// StartEtcd starts the etcd and waits until it accepts connections.
func StartEtcd(ctx context.Context, o EtcdOptions) (*Etcd, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := SignCertificate(o.CA, certs.Config{
		CommonName: "cabpi-e2e-external-etcd",
		AltNames:   certs.AltNames{IPs: []net.IP{net.ParseIP(o.Address.String()), net.ParseIP("127.0.0.1")}},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"server.crt": certPEM, "server.key": keyPEM, "ca.crt": o.CA.KeyPair.Cert}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.Dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	port, err := freePortOn(o.Address)
	if err != nil {
		return nil, err
	}
	peer, err := freePort()
	if err != nil {
		return nil, err
	}
	client := "https://" + net.JoinHostPort(o.Address.String(), strconv.Itoa(port))
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	log, err := os.Create(filepath.Join(o.Dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Bin, "--name=external", "--data-dir="+filepath.Join(o.Dir, "data"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--cert-file="+filepath.Join(o.Dir, "server.crt"), "--key-file="+filepath.Join(o.Dir, "server.key"),
		"--client-cert-auth", "--trusted-ca-file="+filepath.Join(o.Dir, "ca.crt"),
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=external="+peerURL)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting the external etcd: %w", err)
	}
	e := &Etcd{Endpoint: client, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(e.done)
	}()
	addr := net.JoinHostPort(o.Address.String(), strconv.Itoa(port))
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return e, nil
		}
		select {
		case <-ctx.Done():
			_ = e.Stop()
			return nil, ctx.Err()
		case <-e.done:
			return nil, fmt.Errorf("the external etcd exited; see %s", filepath.Join(o.Dir, "etcd.log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the etcd and waits for it.
func (e *Etcd) Stop() error {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
		return errors.New("the external etcd did not stop: killed")
	}
}

// SignCertificate makes a key and a certificate signed by ca, both PEM-encoded, with Cluster
// API's certificate helpers.
func SignCertificate(ca *secret.Certificate, cfg certs.Config) (certPEM, keyPEM []byte, err error) {
	caCert, err := certs.DecodeCertPEM(ca.KeyPair.Cert)
	if err != nil {
		return nil, nil, err
	}
	caKey, err := certs.DecodePrivateKeyPEM(ca.KeyPair.Key)
	if err != nil {
		return nil, nil, err
	}
	key, err := certs.NewPrivateKey()
	if err != nil {
		return nil, nil, err
	}
	cert, err := cfg.NewSignedCert(key, caCert, caKey)
	if err != nil {
		return nil, nil, err
	}
	return certs.EncodeCertPEM(cert), certs.EncodePrivateKeyPEM(key), nil
}

// freePortOn asks the kernel for a free port on addr.
func freePortOn(addr netip.Addr) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
