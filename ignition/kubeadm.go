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
	"path"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmtypes "sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types"
	"sigs.k8s.io/yaml"
)

// kubeadmDocumentSeparator joins the ClusterConfiguration and InitConfiguration documents of
// /etc/kubeadm.yml; kubeadm reads both from one multi-document file.
const kubeadmDocumentSeparator = "---\n"

// ValidateKubernetesVersion reports whether kubeadm configuration can be written for the
// Kubernetes version v ("v1.34.0", "1.34"): it must parse as semver and be at least 1.22, the
// oldest version Cluster API's kubeadm types serialise. The error is an *Error with Kind
// ErrUnsupportedKubernetesVersion at PartKubernetesVersion.
func ValidateKubernetesVersion(v string) error {
	_, err := parseKubernetesVersion(v)
	return asError(err)
}

// parseKubernetesVersion parses v and asks Cluster API which kubeadm API serves it, so the
// supported range is exactly the one the marshalling functions accept.
func parseKubernetesVersion(v string) (semver.Version, *Error) {
	ver, err := semver.ParseTolerant(v)
	if err != nil {
		return semver.Version{}, errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion),
			"Kubernetes version %q is not a semantic version: %v", v, err)
	}
	// ParseTolerant drops leading zeros ("v1.034.0" is 1.34.0), but the node is not told the
	// parsed version: the release is fetched by the string, which no release has, and Cluster API
	// compares the Machine's version with the kubelet's as strings.
	core, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), "-")
	core, _, _ = strings.Cut(core, "+")
	for _, segment := range strings.Split(core, ".") {
		if len(segment) > 1 && segment[0] == '0' {
			return semver.Version{}, errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion),
				"Kubernetes version %q has a leading zero: releases are named v%s, and Cluster API compares the Machine's "+
					"version with the node's as written", v, ver)
		}
	}
	if _, err := kubeadmtypes.KubeVersionToKubeadmAPIGroupVersion(ver); err != nil {
		return semver.Version{}, errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion),
			"Kubernetes version %q is not supported: %v", v, err)
	}
	return ver, nil
}

// kubeadmConfig writes /etc/kubeadm.yml for the role: ClusterConfiguration and
// InitConfiguration for init, JoinConfiguration for the join roles, in the kubeadm API version
// that Cluster API picks for the Kubernetes version. Files the configuration needs on the node
// (the discovery kubeconfig) are returned too. md names the node from metadata (nil: no). Every
// problem found is returned; the configuration is "" when there is one.
func kubeadmConfig(in *Input, ver semver.Version, md *metadataSource) (string, []ownedFile, []*Error) {
	providerID := in.NodeName != nil && in.NodeName.ProviderID
	rep := &Report{}
	switch in.Role {
	case RoleInit:
		init := &kubeadmv1.InitConfiguration{}
		if in.InitConfiguration != nil {
			init = in.InitConfiguration.DeepCopy()
		}
		rep.add(applyNodeName(&init.NodeRegistration, md, providerID, At(PartInitConfiguration, "nodeRegistration")))
		cluster, err := kubeadmtypes.MarshalClusterConfigurationForVersion(in.ClusterConfiguration, ver, in.ClusterData)
		if err != nil {
			rep.add(errorf(ErrInvalidInput, At(PartClusterConfiguration), "cannot write kubeadm ClusterConfiguration: %v", err))
		}
		initYAML, err := kubeadmtypes.MarshalInitConfigurationForVersion(init, ver)
		if err != nil {
			rep.add(errorf(ErrInvalidInput, At(PartInitConfiguration), "cannot write kubeadm InitConfiguration: %v", err))
		}
		if len(rep.Errors) > 0 {
			return "", nil, rep.Errors
		}
		return cluster + kubeadmDocumentSeparator + initYAML, nil, nil
	case RoleControlPlaneJoin, RoleWorkerJoin:
		join, errs := joinConfigurationFor(in.Role, in.JoinConfiguration)
		if join == nil {
			return "", nil, errs
		}
		rep.addAll(errs)
		rep.add(applyNodeName(&join.NodeRegistration, md, providerID, At(PartJoinConfiguration, "nodeRegistration")))
		files, ierr := discoveryFiles(&join.Discovery)
		rep.add(ierr)
		if len(rep.Errors) > 0 {
			return "", files, rep.Errors
		}
		out, err := kubeadmtypes.MarshalJoinConfigurationForVersion(join, ver)
		if err != nil {
			return "", nil, []*Error{errorf(ErrInvalidInput, At(PartJoinConfiguration), "cannot write kubeadm JoinConfiguration: %v", err)}
		}
		return out, files, nil
	default:
		return "", nil, []*Error{errorf(ErrInvalidInput, At(PartRole), "unknown role %q", in.Role)}
	}
}

// joinConfigurationFor returns a copy of jc adjusted to the role; the caller's object is never
// modified. A worker gets Cluster API's uninitialized taint, which Cluster API removes once it
// has synced the Machine's labels to the Node. A control-plane join gets an (empty)
// controlPlane section if it has none, because that section is what makes `kubeadm join` join
// the control plane; its taints are left alone, since nil (kubeadm's default control-plane
// taint) and empty (no taints) mean different things.
//
// Problems are returned with the copy, which is nil only when there is nothing to check further.
func joinConfigurationFor(role Role, jc *kubeadmv1.JoinConfiguration) (*kubeadmv1.JoinConfiguration, []*Error) {
	if jc == nil {
		return nil, []*Error{errorf(ErrInvalidInput, At(PartJoinConfiguration), "a %s join needs a JoinConfiguration", role)}
	}
	errs := checkTokens(&jc.Discovery)
	out := jc.DeepCopy()
	switch role {
	case RoleWorkerJoin:
		if out.ControlPlane != nil {
			at := At(PartJoinConfiguration, JoinControlPlane)
			errs = append(errs, errorf(ErrInvalidInput, at, "a worker must not set %s: kubeadm would join it to the control plane", at))
		}
		taints := withUninitializedTaint(out.NodeRegistration.Taints)
		out.NodeRegistration.Taints = &taints
	case RoleControlPlaneJoin:
		if out.ControlPlane == nil {
			out.ControlPlane = &kubeadmv1.JoinControlPlane{}
		}
	}
	return out, errs
}

// BootstrapTokenPattern is the form kubeadm accepts for a bootstrap token.
const BootstrapTokenPattern = "[a-z0-9]{6}.[a-z0-9]{16}"

// checkTokens refuses each discovery or TLS bootstrap token kubeadm would refuse at boot. The
// message never repeats the token: it is a credential.
func checkTokens(d *kubeadmv1.Discovery) []*Error {
	var errs []*Error
	for _, t := range []struct {
		at    Place
		value string
	}{
		{At(PartJoinConfiguration, "discovery", "bootstrapToken", "token"), d.BootstrapToken.Token},
		{At(PartJoinConfiguration, "discovery", "tlsBootstrapToken"), d.TLSBootstrapToken},
	} {
		if t.value != "" && !bootstraputil.IsValidBootstrapToken(t.value) {
			errs = append(errs, errorf(ErrInvalidInput, t.at, "not a kubeadm bootstrap token: it must match %s", BootstrapTokenPattern))
		}
	}
	return errs
}

// discoveryFile is where the discovery kubeconfig file comes from in the JoinConfiguration: the
// place of its member path.
func discoveryFile(path ...Member) Place {
	return At(PartJoinConfiguration, append([]Member{"discovery", "file"}, path...)...)
}

// discoveryKubeconfigMode: the kubeconfig may carry credentials (exec environment, auth provider
// configuration).
const discoveryKubeconfigMode = 0o600

// discoveryFiles writes the kubeconfig of file discovery when the configuration describes it
// (discovery.file.kubeConfig) rather than pointing at a file the user provides, as Cluster
// API's KubeadmConfig does. The server and CA must be filled in (from the Cluster) before.
func discoveryFiles(d *kubeadmv1.Discovery) ([]ownedFile, *Error) {
	f := d.File
	if !f.KubeConfig.IsDefined() {
		return nil, nil
	}
	if !path.IsAbs(f.KubeConfigPath) {
		return nil, errorf(ErrInvalidInput, discoveryFile("kubeConfigPath"),
			"%q is not an absolute path: with kubeConfig set, the kubeconfig is written to the node at kubeConfigPath", f.KubeConfigPath)
	}
	c := f.KubeConfig.Cluster
	if c.Server == "" {
		return nil, errorf(ErrInvalidInput, discoveryFile("kubeConfig", "cluster", "server"), "the discovery kubeconfig has no server")
	}
	insecure := c.InsecureSkipTLSVerify != nil && *c.InsecureSkipTLSVerify
	if len(c.CertificateAuthorityData) == 0 && !insecure {
		return nil, errorf(ErrInvalidInput, discoveryFile("kubeConfig", "cluster", "certificateAuthorityData"),
			"the discovery kubeconfig has no certificate authority")
	}
	user := clientcmdv1.AuthInfo{}
	if p := f.KubeConfig.User.AuthProvider; p.IsDefined() {
		user.AuthProvider = &clientcmdv1.AuthProviderConfig{Name: p.Name, Config: p.Config}
	}
	if e := f.KubeConfig.User.Exec; e.IsDefined() {
		apiVersion := e.APIVersion
		if apiVersion == "" {
			apiVersion = "client.authentication.k8s.io/v1"
		}
		user.Exec = &clientcmdv1.ExecConfig{
			Command:            e.Command,
			Args:               e.Args,
			APIVersion:         apiVersion,
			ProvideClusterInfo: e.ProvideClusterInfo != nil && *e.ProvideClusterInfo,
			// Nobody is at the console at first boot.
			InteractiveMode: clientcmdv1.NeverExecInteractiveMode,
		}
		for _, env := range e.Env {
			user.Exec.Env = append(user.Exec.Env, clientcmdv1.ExecEnvVar{Name: env.Name, Value: env.Value})
		}
	}
	const name = "default"
	kubeconfig := clientcmdv1.Config{
		Kind:           "Config",
		APIVersion:     "v1",
		CurrentContext: name,
		Clusters: []clientcmdv1.NamedCluster{{Name: name, Cluster: clientcmdv1.Cluster{
			Server:                   c.Server,
			TLSServerName:            c.TLSServerName,
			InsecureSkipTLSVerify:    insecure,
			CertificateAuthorityData: c.CertificateAuthorityData,
			ProxyURL:                 c.ProxyURL,
		}}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{Name: name, AuthInfo: user}},
		Contexts:  []clientcmdv1.NamedContext{{Name: name, Context: clientcmdv1.Context{Cluster: name, AuthInfo: name}}},
	}
	data, err := yaml.Marshal(kubeconfig)
	if err != nil {
		return nil, errorf(ErrInvalidInput, discoveryFile("kubeConfig"), "cannot write the discovery kubeconfig: %v", err)
	}
	return []ownedFile{{
		File:  File{Path: f.KubeConfigPath, Content: data, Mode: discoveryKubeconfigMode},
		place: discoveryFile("kubeConfigPath"),
	}}, nil
}

// withUninitializedTaint returns the taints plus the uninitialized taint, in a new slice, unless
// a taint with the same key and effect is already there.
func withUninitializedTaint(taints *[]corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	if taints != nil {
		out = slices.Clone(*taints)
	}
	for _, t := range out {
		if t.Key == UninitializedTaintKey && string(t.Effect) == UninitializedTaintEffect {
			return out
		}
	}
	return append(out, corev1.Taint{Key: UninitializedTaintKey, Effect: corev1.TaintEffect(UninitializedTaintEffect)})
}
