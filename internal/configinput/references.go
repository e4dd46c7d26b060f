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

package configinput

import (
	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Kinds of objects a spec references.
const (
	SecretKind    = "Secret"
	ConfigMapKind = "ConfigMap"
)

// Reference is an object in the config's namespace whose content shapes the data.
type Reference struct {
	Kind string // SecretKind or ConfigMapKind
	Name string
}

// References lists every object spec reads content from (butane and containerLinuxConfig
// contentFrom, files[].contentFrom, kubernetes.digestsFrom, users[].passwordHashFrom), each once, in spec order. The
// controller indexes configs by them, so that a change to one renders the configs that use it.
func References(spec *cabpiv1.IgnitionConfigSpec) []Reference {
	var refs []Reference
	add := func(kind string, ref *cabpiv1.KeyReference) {
		if ref == nil || ref.Name == "" {
			return
		}
		r := Reference{Kind: kind, Name: ref.Name}
		for _, seen := range refs {
			if seen == r {
				return
			}
		}
		refs = append(refs, r)
	}
	for _, src := range []*cabpiv1.ButaneSource{spec.Butane.ContentFrom, spec.ContainerLinuxConfig.ContentFrom} {
		if src != nil {
			add(SecretKind, src.Secret)
			add(ConfigMapKind, src.ConfigMap)
		}
	}
	for i := range spec.Files {
		if from := spec.Files[i].ContentFrom; from != nil {
			add(SecretKind, &from.Secret)
		}
	}
	if from := spec.Kubernetes.DigestsFrom; from != nil {
		add(SecretKind, from.Secret)
		add(ConfigMapKind, from.ConfigMap)
	}
	for i := range spec.Users {
		if from := spec.Users[i].PasswordHashFrom; from != nil {
			add(SecretKind, &from.Secret)
		}
	}
	return refs
}
