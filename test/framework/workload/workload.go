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

// Package workload runs the control plane of a real-node test's workload cluster on the host,
// started the way `kubeadm init` configures one: the cluster's certificates (generated as a
// control-plane provider generates them, with Cluster API's util/secret), etcd and
// kube-apiserver listening on the suite's bridge address with bootstrap-token authentication,
// kube-controller-manager with the CSR signer, approver, bootstrap signer and token cleaner,
// kube-scheduler, and the real `kubeadm init phase` commands that make a cluster joinable
// (upload-config kubeadm and kubelet, bootstrap-token).
package workload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/yaml"
)

// Options say where the control plane runs and with what.
type Options struct {
	// Dir holds the certificates, kubeconfigs, etcd's data and the logs; it is created.
	Dir string
	// Address is the bridge's host address: the API server listens there, and its serving
	// certificate names it.
	Address netip.Addr
	// KubernetesVersion is the cluster's version (kubeadm's configuration).
	KubernetesVersion string
	// KubeBinDir has kubeadm and kube-controller-manager at KubernetesVersion; EnvtestBinDir has
	// etcd and kube-apiserver (the envtest build).
	KubeBinDir, EnvtestBinDir string
}

// ControlPlane is a running workload control plane.
type ControlPlane struct {
	opts Options
	// Certificates are the cluster's CA, etcd CA, front-proxy CA and service-account key pair:
	// store them as the Cluster's <cluster>-ca, -etcd, -proxy and -sa Secrets.
	Certificates secret.Certificates
	// Endpoint is the API server's address and port (the Cluster's controlPlaneEndpoint).
	Endpoint string
	// AdminKubeconfig is a kubeconfig with cluster-admin rights (kubeadm's super-admin.conf).
	AdminKubeconfig string
	procs           []*exec.Cmd
}

// nodeCertificatesDir is where nodes find the cluster's certificates: the ClusterConfiguration
// uploaded for joining nodes says so.
const nodeCertificatesDir = "/etc/kubernetes/pki"

// Start generates the certificates, starts etcd, kube-apiserver and kube-controller-manager,
// and makes the cluster joinable. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, retErr error) {
	cp := &ControlPlane{opts: opts, Endpoint: net.JoinHostPort(opts.Address.String(), "6443")}
	defer func() {
		if retErr != nil {
			_ = cp.Stop()
		}
	}()
	pki := filepath.Join(opts.Dir, "pki")
	if err := os.MkdirAll(pki, 0o755); err != nil {
		return nil, err
	}
	cp.Certificates = secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{CertificatesDir: nodeCertificatesDir})
	if err := cp.Certificates.Generate(); err != nil {
		return nil, fmt.Errorf("generating the cluster's certificates: %w", err)
	}
	for _, f := range cp.Certificates.AsFiles() {
		p := filepath.Join(pki, strings.TrimPrefix(f.Path, nodeCertificatesDir+"/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(f.Content), 0o600); err != nil {
			return nil, err
		}
	}
	hostConfig, err := cp.kubeadmConfig(pki)
	if err != nil {
		return nil, err
	}
	// kubeadm makes what a control plane needs besides the CAs, signed by them: the API
	// server's serving certificate (naming the bridge address), its kubelet and etcd client
	// certificates, and the kubeconfigs.
	if err := cp.kubeadm(ctx, "init", "phase", "certs", "all", "--config", hostConfig); err != nil {
		return nil, err
	}
	for _, kubeconfig := range []string{"super-admin", "controller-manager", "scheduler"} {
		if err := cp.kubeadm(ctx, "init", "phase", "kubeconfig", kubeconfig, "--config", hostConfig, "--kubeconfig-dir", opts.Dir); err != nil {
			return nil, err
		}
	}
	cp.AdminKubeconfig = filepath.Join(opts.Dir, "super-admin.conf")

	etcdPort, err := freePort()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := cp.start("etcd", filepath.Join(opts.EnvtestBinDir, "etcd"),
		"--data-dir", filepath.Join(opts.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(peerPort)); err != nil {
		return nil, err
	}
	if err := cp.start("kube-apiserver", filepath.Join(opts.EnvtestBinDir, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address="+opts.Address.String(), "--advertise-address="+opts.Address.String(), "--secure-port=6443",
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--kubelet-client-certificate="+filepath.Join(pki, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "apiserver-kubelet-client.key"),
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--enable-bootstrap-token-auth", "--authorization-mode=Node,RBAC", "--allow-privileged=true"); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	// The controller manager exits when RBAC is not there yet: it starts after the API server is ready.
	kcmConf := filepath.Join(opts.Dir, "controller-manager.conf")
	if err := cp.start("kube-controller-manager", filepath.Join(opts.KubeBinDir, "kube-controller-manager"),
		"--kubeconfig="+kcmConf, "--authentication-kubeconfig="+kcmConf, "--authorization-kubeconfig="+kcmConf,
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--cluster-signing-cert-file="+filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file="+filepath.Join(pki, "ca.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner"); err != nil {
		return nil, err
	}
	// The scheduler places the Pods of the workload's Deployments (the in-place tests' drain
	// moves them between nodes); Pods the suite pins to a node with nodeName need none.
	schedConf := filepath.Join(opts.Dir, "scheduler.conf")
	if err := cp.start("kube-scheduler", filepath.Join(opts.KubeBinDir, "kube-scheduler"),
		"--kubeconfig="+schedConf, "--authentication-kubeconfig="+schedConf, "--authorization-kubeconfig="+schedConf,
		"--bind-address=127.0.0.1", "--secure-port=0"); err != nil {
		return nil, err
	}
	// What joining nodes read: the ClusterConfiguration (with the nodes' certificatesDir), the
	// kubelet's configuration, cluster-info and the bootstrap RBAC.
	nodeConfig, err := cp.kubeadmConfig(nodeCertificatesDir)
	if err != nil {
		return nil, err
	}
	for _, phase := range [][]string{{"upload-config", "kubeadm"}, {"upload-config", "kubelet"}} {
		if err := cp.kubeadm(ctx, append(append([]string{"init", "phase"}, phase...), "--config", nodeConfig, "--kubeconfig", cp.AdminKubeconfig)...); err != nil {
			return nil, err
		}
	}
	if err := cp.kubeadm(ctx, "init", "phase", "bootstrap-token", "--config", hostConfig, "--kubeconfig", cp.AdminKubeconfig); err != nil {
		return nil, err
	}
	return cp, nil
}

// initConfiguration and clusterConfiguration are what kubeadm's phases read, typed: only the
// fields the phases here need.
type initConfiguration struct {
	APIVersion       string           `json:"apiVersion"`
	Kind             string           `json:"kind"`
	LocalAPIEndpoint localAPIEndpoint `json:"localAPIEndpoint"`
	NodeRegistration nodeRegistration `json:"nodeRegistration"`
	BootstrapTokens  []any            `json:"bootstrapTokens"`
}

type localAPIEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress"`
	BindPort         int    `json:"bindPort"`
}

type nodeRegistration struct {
	Name string `json:"name"`
}

type clusterConfiguration struct {
	APIVersion           string     `json:"apiVersion"`
	Kind                 string     `json:"kind"`
	KubernetesVersion    string     `json:"kubernetesVersion"`
	ControlPlaneEndpoint string     `json:"controlPlaneEndpoint"`
	CertificatesDir      string     `json:"certificatesDir"`
	Networking           networking `json:"networking"`
}

type networking struct {
	ServiceSubnet string `json:"serviceSubnet"`
}

// kubeadmConfig writes kubeadm's configuration with certificatesDir and returns its path.
// No bootstrap token is listed: the phases create none, the suite's provider makes them.
func (cp *ControlPlane) kubeadmConfig(certificatesDir string) (string, error) {
	const apiVersion = "kubeadm.k8s.io/v1beta4"
	var doc bytes.Buffer
	for i, v := range []any{
		initConfiguration{APIVersion: apiVersion, Kind: "InitConfiguration",
			LocalAPIEndpoint: localAPIEndpoint{AdvertiseAddress: cp.opts.Address.String(), BindPort: 6443},
			NodeRegistration: nodeRegistration{Name: "workload-control-plane"}, BootstrapTokens: []any{}},
		clusterConfiguration{APIVersion: apiVersion, Kind: "ClusterConfiguration", KubernetesVersion: cp.opts.KubernetesVersion,
			ControlPlaneEndpoint: cp.Endpoint, CertificatesDir: certificatesDir, Networking: networking{ServiceSubnet: "10.96.0.0/12"}},
	} {
		b, err := yaml.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("writing kubeadm's configuration: %w", err)
		}
		if i > 0 {
			doc.WriteString("---\n")
		}
		doc.Write(b)
	}
	name := "kubeadm-host.yaml"
	if certificatesDir == nodeCertificatesDir {
		name = "kubeadm-nodes.yaml"
	}
	p := filepath.Join(cp.opts.Dir, name)
	return p, os.WriteFile(p, doc.Bytes(), 0o600)
}

func (cp *ControlPlane) kubeadm(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, filepath.Join(cp.opts.KubeBinDir, "kubeadm"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubeadm %s: %w: %s", strings.Join(args[:3], " "), err, out)
	}
	return nil
}

// start starts a control-plane process, its output in <Dir>/<name>.log.
func (cp *ControlPlane) start(name, bin string, args ...string) error {
	log, err := os.Create(filepath.Join(cp.opts.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	cp.procs = append(cp.procs, cmd)
	return nil
}

// waitReady waits until the API server answers /readyz (readable without credentials) over
// TLS verified against the cluster's CA.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	caPEM, err := os.ReadFile(filepath.Join(cp.opts.Dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the cluster CA does not parse")
	}
	httpClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + cp.Endpoint + "/readyz"
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("the workload API server at %s is not ready: %w", cp.Endpoint, last)
}

// Stop stops every process, last started first, and waits for them.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
			errs = append(errs, fmt.Errorf("%s did not stop: killed", filepath.Base(p.Path)))
		}
	}
	cp.procs = nil
	return errors.Join(errs...)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
