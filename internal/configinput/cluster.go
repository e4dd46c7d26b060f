package configinput

import (
	"fmt"

	bootstrapkubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// What the cluster contributes to a node's input, shared by the controller (real values) and
// the offline callers (placeholders), so they agree on what a spec means.

// CertificateFiles turns looked-up certificates into files: keys 0600, certificates 0644, owned
// by root (Ignition's default; naming "root" would make Ignition look the user up by name).
// A certificate or key without content, or without a path (an external etcd CA has a
// certificate but no key), is not written.
func CertificateFiles(certs secret.Certificates) []ignition.File {
	var files []ignition.File
	for _, c := range certs {
		if c.KeyPair == nil {
			continue
		}
		if len(c.KeyPair.Cert) > 0 && c.CertFile != "" {
			files = append(files, ignition.File{Path: c.CertFile, Content: c.KeyPair.Cert, Mode: 0o644})
		}
		if len(c.KeyPair.Key) > 0 && c.KeyFile != "" {
			files = append(files, ignition.File{Path: c.KeyFile, Content: c.KeyPair.Key, Mode: 0o600})
		}
	}
	return files
}

// PlaceholderCertificates fills certs with placeholder content where the cluster would have
// given them theirs (a key only where the certificate has a key file), then writes them as
// CertificateFiles does.
func PlaceholderCertificates(certificates secret.Certificates) []ignition.File {
	for _, c := range certificates {
		kp := &certs.KeyPair{Cert: fmt.Appendf(nil, "placeholder: %s certificate from the cluster\n", c.Purpose)}
		if c.KeyFile != "" {
			kp.Key = fmt.Appendf(nil, "placeholder: %s key from the cluster\n", c.Purpose)
		}
		c.KeyPair = kp
	}
	return CertificateFiles(certificates)
}

// DiscoveryKubeconfigNeeds reports what file discovery described in the spec
// (discovery.file.kubeConfig) still needs from the cluster: the control-plane endpoint for its
// server, and the cluster CA for its certificate authority.
func DiscoveryKubeconfigNeeds(join *bootstrapkubeadmv1.JoinConfiguration) (endpoint, ca bool) {
	kc := join.Discovery.File.KubeConfig
	if !kc.IsDefined() {
		return false, false
	}
	insecure := kc.Cluster.InsecureSkipTLSVerify != nil && *kc.Cluster.InsecureSkipTLSVerify
	return kc.Cluster.Server == "", len(kc.Cluster.CertificateAuthorityData) == 0 && !insecure
}

// DefaultDiscoveryKubeconfig fills in, as Cluster API's KubeadmConfig does, the server (the
// Cluster's control-plane endpoint, "host:port") and the certificate authority (the cluster CA
// certificate, PEM) of a discovery kubeconfig the spec describes, where the spec leaves them
// empty. join is the caller's copy.
func DefaultDiscoveryKubeconfig(join *bootstrapkubeadmv1.JoinConfiguration, endpoint string, caCert []byte) {
	needsEndpoint, needsCA := DiscoveryKubeconfigNeeds(join)
	cluster := &join.Discovery.File.KubeConfig.Cluster
	if needsEndpoint && endpoint != "" {
		cluster.Server = "https://" + endpoint
	}
	if needsCA && len(caCert) > 0 {
		cluster.CertificateAuthorityData = caCert
	}
}
