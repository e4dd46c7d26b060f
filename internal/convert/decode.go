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

package convert

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmconversion "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks/conversion"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// droppedAnnotations describe the source object, not the converted one: kubectl's record of the
// last apply, Cluster API's conversion data of the source version.
var droppedAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"cluster.x-k8s.io/conversion-data",
}

// convertDocument decodes a KubeadmConfig or KubeadmConfigTemplate of version (v1beta1 is
// converted to v1beta2 with Cluster API's own conversion) and converts it.
func convertDocument(version, kind string, doc []byte) (Converted, []Finding, error) {
	switch kind {
	case "KubeadmConfig":
		src, err := decodeKubeadmConfig(version, doc)
		if err != nil {
			return Converted{}, nil, err
		}
		f := &findings{object: describe(kind, src.Namespace, src.Name), prefix: "spec."}
		spec, err := convertSpec(&src.Spec, f)
		if err != nil {
			return Converted{}, nil, err
		}
		out := &cabpiv1.IgnitionConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: cabpiv1.GroupVersion.String(), Kind: "IgnitionConfig"},
			ObjectMeta: objectMeta(src.ObjectMeta),
			Spec:       *spec,
		}
		return Converted{Source: f.object, Target: describe(out.Kind, out.Namespace, out.Name), Object: out, Spec: &out.Spec}, f.list, nil
	default:
		src, err := decodeKubeadmConfigTemplate(version, doc)
		if err != nil {
			return Converted{}, nil, err
		}
		f := &findings{object: describe(kind, src.Namespace, src.Name), prefix: "spec.template.spec."}
		spec, err := convertSpec(&src.Spec.Template.Spec, f)
		if err != nil {
			return Converted{}, nil, err
		}
		out := &cabpiv1.IgnitionConfigTemplate{
			TypeMeta:   metav1.TypeMeta{APIVersion: cabpiv1.GroupVersion.String(), Kind: "IgnitionConfigTemplate"},
			ObjectMeta: objectMeta(src.ObjectMeta),
			Spec: cabpiv1.IgnitionConfigTemplateSpec{Template: cabpiv1.IgnitionConfigTemplateResource{
				ObjectMeta: src.Spec.Template.ObjectMeta,
				Spec:       *spec,
			}},
		}
		return Converted{Source: f.object, Target: describe(out.Kind, out.Namespace, out.Name), Object: out, Spec: &out.Spec.Template.Spec}, f.list, nil
	}
}

func decodeKubeadmConfig(version string, doc []byte) (*kubeadmv1.KubeadmConfig, error) {
	return decodeKubeadm("KubeadmConfig", version, doc, kubeadmconversion.ConvertKubeadmConfigV1Beta1ToHub)
}

func decodeKubeadmConfigTemplate(version string, doc []byte) (*kubeadmv1.KubeadmConfigTemplate, error) {
	return decodeKubeadm("KubeadmConfigTemplate", version, doc, kubeadmconversion.ConvertKubeadmConfigTemplateV1Beta1ToHub)
}

// decodeKubeadm reads a document of kind at version into Hub, the v1beta2 type: a v1beta2
// document as it is, a v1beta1 one (Old) converted with Cluster API's own conversion.
func decodeKubeadm[Hub, Old any](kind, version string, doc []byte, fromV1Beta1 func(context.Context, *Old, *Hub) error) (*Hub, error) {
	out := new(Hub)
	switch version {
	case "v1beta2":
		if err := yaml.UnmarshalStrict(doc, out); err != nil {
			return nil, fmt.Errorf("reading the %s: %w", kind, err)
		}
	case "v1beta1":
		src := new(Old)
		if err := yaml.UnmarshalStrict(doc, src); err != nil {
			return nil, fmt.Errorf("reading the %s: %w", kind, err)
		}
		if err := fromV1Beta1(context.Background(), src, out); err != nil {
			return nil, fmt.Errorf("converting the v1beta1 %s to v1beta2: %w", kind, err)
		}
	default:
		return nil, unsupportedVersion(version)
	}
	return out, nil
}

func unsupportedVersion(version string) error {
	return fmt.Errorf("apiVersion %s/%s is not supported: convert from v1beta1 or v1beta2 (clusterctl upgrade or kubectl get from a cluster serving them)", kubeadmGroup, version)
}

// objectMeta keeps what names and labels the object; what the API server set on the source
// (uid, resourceVersion, owners, timestamps, managed fields) belongs to the source alone.
func objectMeta(src metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: src.Name, Namespace: src.Namespace, Labels: maps.Clone(src.Labels)}
	if len(src.Annotations) > 0 {
		out.Annotations = maps.Clone(src.Annotations)
		for _, a := range droppedAnnotations {
			delete(out.Annotations, a)
		}
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	}
	return out
}
