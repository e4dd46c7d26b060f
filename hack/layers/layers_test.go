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

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mod = "example.com/m"

// pkg is a package of the fake module with its non-test and test imports (paths inside the
// module) and one file per entry of names.
func pkg(rel string, imports, testImports []string) Package {
	full := func(l []string) []string {
		var out []string
		for _, r := range l {
			out = append(out, strings.TrimSuffix(mod+"/"+r, "/"))
		}
		return out
	}
	p := Package{ImportPath: strings.TrimSuffix(mod+"/"+rel, "/"), Dir: "/src/" + rel, Module: &struct{ Path string }{mod},
		Imports: full(imports), TestImports: full(testImports), GoFiles: []string{"a.go"}}
	if rel == "" {
		p.ImportPath = mod
	}
	return p
}

// files answers readNames from a map of file → imports.
func files(m map[string][]importName) nameReader {
	return func(file string) ([]importName, error) { return m[file], nil }
}

func TestCheck(t *testing.T) {
	clean := []Package{
		pkg("apis/v1alpha1", nil, nil),
		pkg("ignition/internal/docpos", nil, nil),
		pkg("ignition/internal/escape", []string{"ignition/internal/docpos"}, nil),
		pkg("ignition/clc", []string{"ignition/internal/docpos"}, nil),
		pkg("ignition", []string{"apis/v1alpha1", "ignition/clc"}, nil),
		pkg("internal/configinput", []string{"ignition", "apis/v1alpha1"}, nil),
		pkg("controllers", []string{"internal/configinput", "ignition"}, []string{"test/framework/testenv", "internal/setup"}),
		pkg("internal/setup", []string{"controllers", "webhooks"}, nil),
		pkg("webhooks", []string{"internal/configinput"}, nil),
		pkg("test/framework/testenv", []string{"internal/setup", "test/framework/ignitionapply"}, nil),
		pkg("test/framework/ignitionapply", nil, nil),
		pkg("cmd/internal/cliinput", nil, nil),
		pkg("cmd/render", []string{"cmd/internal/cliinput", "internal/configinput"}, nil),
		pkg("", []string{"cmd/render"}, nil),
		pkg("test/integration/x", nil, []string{"test/framework/testenv", "internal/setup"}),
		pkg("hack/demo", []string{"test/framework/testenv"}, nil),
	}
	none := files(nil)
	v, err := check(clean, none)
	require.NoError(t, err)
	assert.Empty(t, v, "the house as it should be")

	for _, tc := range []struct {
		name string
		bad  Package
		want string
	}{
		{"a lower layer imports a higher one", pkg("ignition", []string{"internal/configinput"}, nil), `layer "ignition" (rank 3) may not import layer "internal/configinput"`},
		{"the renderer imports the reconciler", pkg("ignition", []string{"controllers"}, nil), "may not import"},
		{"siblings of one layer", pkg("webhooks", []string{"controllers"}, nil), `layer "webhooks" (rank 6) may not import layer "controllers" (rank 6)`},
		{"a command imports another", pkg("cmd/convert", []string{"cmd/render"}, nil), `layer "cmd" (rank 10) may not import layer "cmd"`},
		{"a test imports a command", pkg("test/integration/y", nil, []string{"cmd/render"}), "only main"},
		{"the framework outside tests", pkg("controllers", []string{"test/framework/testenv"}, nil), "imported only by tests"},
		{"a suite imported", pkg("test/integration/y", nil, []string{"test/integration/x"}), "a test suite is imported by nothing"},
		{"the translation imports the renderer", pkg("ignition/clc", []string{"ignition"}, nil), `layer "ignition/" (rank 2) may not import layer "ignition" (rank 3)`},
		{"a package in no layer", pkg("pkg/stray", nil, nil), "in no layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := check(append(clean, tc.bad), none)
			require.NoError(t, err)
			require.Len(t, v, 1, "%v", v)
			assert.Contains(t, v[0], tc.want)
		})
	}
}

func TestAliases(t *testing.T) {
	p1, p2 := pkg("controllers", nil, nil), pkg("webhooks", nil, nil)
	f1, f2 := "/src/controllers/a.go", "/src/webhooks/a.go"
	for _, tc := range []struct {
		name   string
		a, b   importName
		wantOK bool
		want   string
	}{
		{"one alias", importName{"k8s.io/api/core/v1", "corev1"}, importName{"k8s.io/api/core/v1", "corev1"}, true, ""},
		{"the package's own name, given or not", importName{"k8s.io/x/runtime", "runtime"}, importName{"k8s.io/x/runtime", ""}, true, ""},
		{"two aliases", importName{"k8s.io/api/core/v1", "corev1"}, importName{"k8s.io/api/core/v1", "v1"}, false, "under 2 names"},
		{"alias and none", importName{"sigs.k8s.io/yaml", "sigsyaml"}, importName{"sigs.k8s.io/yaml", ""}, false, "under 2 names"},
		{"a required alias", importName{"sigs.k8s.io/cluster-api/api/core/v1beta2", "clusterv1"}, importName{"sigs.k8s.io/cluster-api/api/core/v1beta2", "v1beta2"}, false, "it is clusterv1 everywhere"},
		{"cabpi's API", importName{mod + "/apis/v1alpha1", "bootstrapv1"}, importName{mod + "/apis/v1alpha1", "bootstrapv1"}, false, "cabpiv1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := check([]Package{p1, p2}, files(map[string][]importName{f1: {tc.a}, f2: {tc.b}}))
			require.NoError(t, err)
			if tc.wantOK {
				assert.Empty(t, v)
				return
			}
			require.NotEmpty(t, v)
			assert.Contains(t, fmt.Sprint(v), tc.want)
		})
	}
}
