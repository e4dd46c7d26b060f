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

package rbac_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// kustomizeNamespace is the namespace config/rbac's namespaced objects and ServiceAccount
// subjects are written with; config/default's kustomization replaces it (namespace: cabpi-system).
const kustomizeNamespace = "system"

// rbacManifests are the objects of config/rbac, in the order its kustomization lists them, as
// kustomize would emit them into namespace: namespaced objects and ServiceAccount subjects of
// bindings move from kustomizeNamespace to namespace. Names are kept (no namePrefix): the test
// API server holds nothing else.
func rbacManifests(namespace string) ([]client.Object, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "config", "rbac")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &kustomization); err != nil {
		return nil, fmt.Errorf("config/rbac/kustomization.yaml: %w", err)
	}
	var objs []client.Object
	for _, file := range kustomization.Resources {
		docs, err := readObjects(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
	}
	for _, obj := range objs {
		if obj.GetNamespace() == kustomizeNamespace {
			obj.SetNamespace(namespace)
		}
		var subjects []rbacv1.Subject
		switch b := obj.(type) {
		case *rbacv1.RoleBinding:
			subjects = b.Subjects
		case *rbacv1.ClusterRoleBinding:
			subjects = b.Subjects
		}
		for i := range subjects {
			if subjects[i].Kind == rbacv1.ServiceAccountKind && subjects[i].Namespace == kustomizeNamespace {
				subjects[i].Namespace = namespace
			}
		}
	}
	return objs, nil
}

// readObjects decodes every YAML document of path into a typed object.
func readObjects(path string) ([]client.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var objs []client.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if strings.TrimSpace(stripComments(string(doc))) == "" {
			continue
		}
		obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		o, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s: %T is no object", path, obj)
		}
		objs = append(objs, o)
	}
}

// readObject reads the one object of kind T in config/rbac/<file>.
func readObject[T runtime.Object](file string) (T, error) {
	var zero T
	root, err := testenv.RepoRoot()
	if err != nil {
		return zero, err
	}
	objs, err := readObjects(filepath.Join(root, "config", "rbac", file))
	if err != nil {
		return zero, err
	}
	if len(objs) != 1 {
		return zero, fmt.Errorf("config/rbac/%s: %d objects, want 1", file, len(objs))
	}
	obj, ok := objs[0].(T)
	if !ok {
		return zero, fmt.Errorf("config/rbac/%s: %T, want %T", file, objs[0], zero)
	}
	return obj, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// permission is one verb on one resource (with subresource, e.g. "clusters/finalizers") of one
// API group ("" is the core group).
type permission struct {
	Group, Resource, Verb string
}

func (p permission) String() string {
	group := p.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s/%s", p.Verb, group, p.Resource)
}

// expand lists the permissions of rules, one per group, resource and verb. Rules this test cannot
// compare (wildcards, resourceNames, nonResourceURLs) are returned as problems.
func expand(rules []rbacv1.PolicyRule) (perms []permission, problems []string) {
	for i, r := range rules {
		for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			if slices.ContainsFunc(field, func(s string) bool { return strings.Contains(s, "*") }) {
				problems = append(problems, fmt.Sprintf("rule %d has a wildcard: %v %v %v", i, r.APIGroups, r.Resources, r.Verbs))
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			problems = append(problems, fmt.Sprintf("rule %d has resourceNames or nonResourceURLs, which this test does not check", i))
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					perms = append(perms, permission{Group: g, Resource: res, Verb: v})
				}
			}
		}
	}
	return perms, problems
}

// rulesWithout returns rules minus p, one rule per remaining permission.
func rulesWithout(rules []rbacv1.PolicyRule, p permission) []rbacv1.PolicyRule {
	perms, _ := expand(rules)
	var out []rbacv1.PolicyRule
	for _, q := range perms {
		if q != p {
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{q.Group}, Resources: []string{q.Resource}, Verbs: []string{q.Verb}})
		}
	}
	return out
}
