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

package webhooks

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// specFieldNames walks t (a spec's type) as its JSON has it and returns the name of every field
// a value is under, by the path of its first appearance; the subtree of a redacted field is not
// walked (it is all replaced).
func specFieldNames(t reflect.Type) map[string]string {
	names := map[string]string{}
	seen := map[reflect.Type]bool{}
	marshaler := reflect.TypeFor[json.Marshaler]()
	textMarshaler := reflect.TypeFor[encoding.TextMarshaler]()
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
			t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
			return
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
				walk(f.Type, path)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := names[name]; !ok {
				names[name] = path + "." + name
			}
			if !secretFields[name] {
				walk(f.Type, path+"."+name)
			}
		}
	}
	walk(t, "spec")
	return names
}

// notSecretFields are the spec's fields reviewed as holding nothing secret: names, paths, public
// keys and certificates, numbers, switches, and the structures that hold other fields.
var notSecretFields = map[string]bool{
	"advertiseAddress": true, "apiServer": true, "apiServerEndpoint": true, "apiVersion": true,
	"append": true, "arch": true, "binaries": true, "bindPort": true, "digestsFrom": true,
	"bootstrapToken": true, "bootstrapTokens": true, "butane": true, "caCertHashes": true,
	"caCertPath": true, "caCertificateValidityPeriodDays": true, "caFile": true, "certFile": true,
	"certSANs": true, "certificateAuthorityData": true, "certificateValidityPeriodDays": true,
	"certificatesDir": true, "cluster": true, "clusterConfiguration": true, "configMap": true,
	"configMapKeyRef": true, "containerLinuxConfig": true, "containerName": true, "contentFrom": true,
	"controlPlane": true, "controlPlaneComponentHealthCheckSeconds": true,
	"controlPlaneEndpoint": true, "controllerManager": true, "criSocket": true, "dataDir": true,
	"description": true, "directory": true, "discovery": true, "discoverySeconds": true,
	"divisor": true, "dns": true, "effect": true, "encoding": true, "encryptionAlgorithm": true,
	"endpoints": true, "etcd": true, "etcdAPICallSeconds": true, "expires": true, "external": true,
	"extraArgs": true, "extraEnvs": true, "extraVolumes": true, "featureGates": true,
	"fieldPath": true, "fieldRef": true, "file": true, "fileKeyRef": true, "files": true,
	"fromMetadata": true, "gecos": true, "groups": true, "homeDir": true, "hostPath": true,
	"ignitionVersion": true, "ignorePreflightErrors": true, "imagePullPolicy": true,
	"imagePullSerial": true, "imageRepository": true, "imageTag": true, "initConfiguration": true,
	"insecureSkipTLSVerify": true, "joinConfiguration": true, "key": true, "keyFile": true,
	"kubeConfig": true, "kubeConfigPath": true, "kubectl": true, "kubeletExtraArgs": true,
	"kubeletHealthCheckSeconds": true, "kubernetes": true, "kubernetesAPICallSeconds": true,
	"local": true, "localAPIEndpoint": true, "mountPath": true, "name": true, "nodeName": true,
	"nodeRegistration": true, "optional": true, "owner": true, "passwordHashFrom": true,
	"patches": true, "path": true, "pathType": true, "peerCertSANs": true, "permissions": true,
	"platform": true, "primaryGroup": true, "providerID": true, "readOnly": true, "resource": true,
	"resourceFieldRef": true, "scheduler": true, "secret": true, "secretKeyRef": true, "server": true,
	"serverCertSANs": true, "shell": true, "skipPhases": true, "source": true,
	"sshAuthorizedKeys": true, "strict": true, "sysext": true, "sysupdate": true, "taints": true,
	"timeAdded": true, "timeouts": true, "tlsBootstrapSeconds": true, "tlsServerName": true,
	"ttlSeconds": true, "unsafeSkipCAVerification": true, "usages": true, "user": true, "users": true,
	"valueFrom": true, "variant": true, "verbosity": true, "volumeName": true,
}

// Every field of the spec (its own and kubeadm's) is either redacted in diffs and messages
// (secretFields) or reviewed as not secret: a field added to the API types, or to Cluster API's
// kubeadm types on an upgrade, fails here until someone decides which.
func TestEverySpecFieldIsClassified(t *testing.T) {
	names := specFieldNames(reflect.TypeFor[cabpiv1.IgnitionConfigSpec]())
	var unclassified []string
	for name, path := range names {
		if secretFields[name] == notSecretFields[name] {
			unclassified = append(unclassified, path)
		}
	}
	sort.Strings(unclassified)
	assert.Empty(t, unclassified, "add each to secretFields (diff.go) or notSecretFields")
	for _, list := range []map[string]bool{secretFields, notSecretFields} {
		for name := range list {
			_, ok := names[name]
			assert.True(t, ok, "%s is not a field of the spec: remove it", name)
		}
	}
}
