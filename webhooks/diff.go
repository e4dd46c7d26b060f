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
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// secretFields are the fields whose values no diff or message shows, by their JSON name wherever
// they are in a spec: file contents, the Butane document, users' password hashes, bootstrap tokens
// (discovery, TLS bootstrap), kubeconfig credentials, name/value pairs
// (extra args, extra environment variables), the pre- and post-kubeadm commands (which carry
// registry passwords in practice), and URLs that may carry credentials (a proxy's, a mirror's).
// An admission error ends up in logs (the topology controller's, the API server's audit log).
// This is the one list: TestEverySpecFieldIsClassified walks the API types and fails on a field
// that is neither here nor reviewed as not secret.
var secretFields = map[string]bool{
	"content": true, "inline": true, "passwordHash": true,
	"token": true, "tlsBootstrapToken": true,
	"authProvider": true, "exec": true, "value": true,
	"preKubeadmCommands": true, "postKubeadmCommands": true,
	"proxyURL": true, "baseURL": true,
}

// specDiff is a readable diff of two specs in their JSON form (-old +new), with the values of
// secretFields replaced by markers that only say whether the value changed.
func specDiff(oldSpec, newSpec *cabpiv1.IgnitionConfigSpec) string {
	o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(oldSpec)
	if err != nil {
		return fmt.Sprintf("(no diff: %v)", err)
	}
	n, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newSpec)
	if err != nil {
		return fmt.Sprintf("(no diff: %v)", err)
	}
	ro, rn := redact(o, n)
	diff := cmp.Diff(ro, rn)
	// cmp uses non-breaking spaces and tabs at random to keep its output unstable; make it plain.
	diff = strings.ReplaceAll(diff, "\u00a0", " ")
	diff = strings.ReplaceAll(diff, "\t", "  ")
	return strings.TrimSpace(diff)
}

// redact walks the old and new JSON trees side by side and replaces the values of secretFields
// by "<redacted>", and the new value by "<redacted: changed>" where the two differ.
// Elements of lists are paired by index.
func redact(o, n any) (any, any) {
	switch om := o.(type) {
	case map[string]any:
		nm, ok := n.(map[string]any)
		if !ok {
			return redactOne(o), redactOne(n)
		}
		ro, rn := map[string]any{}, map[string]any{}
		for k, ov := range om {
			nv, inNew := nm[k]
			switch {
			case !inNew:
				ro[k] = redactValue(k, ov, "<redacted: changed>")
			case secretFields[k]:
				// A change must still show as a line of the diff, without the value: the old
				// side says "<redacted>", the new one "<redacted: changed>".
				ro[k], rn[k] = "<redacted>", "<redacted>"
				if !reflect.DeepEqual(ov, nv) {
					rn[k] = "<redacted: changed>"
				}
			default:
				ro[k], rn[k] = redact(ov, nv)
			}
		}
		for k, nv := range nm {
			if _, inOld := om[k]; !inOld {
				rn[k] = redactValue(k, nv, "<redacted: changed>")
			}
		}
		return ro, rn
	case []any:
		nl, ok := n.([]any)
		if !ok {
			return redactOne(o), redactOne(n)
		}
		ro, rn := make([]any, len(om)), make([]any, len(nl))
		for i := range max(len(om), len(nl)) {
			switch {
			case i < len(om) && i < len(nl):
				ro[i], rn[i] = redact(om[i], nl[i])
			case i < len(om):
				ro[i] = redactOne(om[i])
			default:
				rn[i] = redactOne(nl[i])
			}
		}
		return ro, rn
	}
	return o, redactOne(n)
}

// redactValue is v with key k redacted: marker when k is redacted, else v's redacted fields.
func redactValue(k string, v any, marker string) any {
	if secretFields[k] {
		return marker
	}
	return redactOne(v)
}

// redactOne redacts a tree that has no counterpart on the other side.
func redactOne(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			out[k] = redactValue(k, x, "<redacted: changed>")
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redactOne(x)
		}
		return out
	}
	return v
}
