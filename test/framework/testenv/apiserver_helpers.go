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

package testenv

// The envtest API server as the tests reach it: as a Cluster's endpoint, as a kubeconfig (it
// doubles as every Cluster's workload cluster), as another user.

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// APIEndpoint is the envtest API server as a Cluster controlPlaneEndpoint (127.0.0.1:<port>).
func (e *Environment) APIEndpoint() clusterv1.APIEndpoint {
	host := e.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		panic(fmt.Sprintf("testenv: parsing envtest host %q: %v", e.Config.Host, err))
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = 443
	}
	return clusterv1.APIEndpoint{Host: u.Hostname(), Port: int32(port)} //nolint:gosec // a TCP port
}

// Kubeconfig returns a kubeconfig for the envtest API server (admin client certificate), with
// cluster/context names derived from clusterName.
func (e *Environment) Kubeconfig(clusterName string) ([]byte, error) {
	user := e.Config.Username
	if user == "" {
		user = "admin"
	}
	ctxName := user + "@" + clusterName
	server := e.Config.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{clusterName: {
			Server:                   server,
			CertificateAuthorityData: e.Config.CAData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{user: {
			ClientCertificateData: e.Config.CertData,
			ClientKeyData:         e.Config.KeyData,
		}},
		Contexts:       map[string]*clientcmdapi.Context{ctxName: {Cluster: clusterName, AuthInfo: user}},
		CurrentContext: ctxName,
	})
}

// ImpersonatedConfig returns a copy of the admin Config whose requests the API server
// authorizes as user (impersonation; the admin may impersonate anyone). For a ServiceAccount pass
// "system:serviceaccount:<namespace>:<name>": the API server adds the account's groups itself.
// The ServiceAccount need not exist; what it may do is what RBAC bindings to it allow.
func (e *Environment) ImpersonatedConfig(user string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}
