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

package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// ChangedOutsideInPlace is the whole answer to "may an in-place update make this change"; each
// row also checks that SpecHash, which the controller records, agrees with it.
func TestChangedOutsideInPlace(t *testing.T) {
	sysext := func(baseURL string) cabpiv1.KubernetesSpec {
		return cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: baseURL}}
	}
	binaries := func(baseURL string) cabpiv1.KubernetesSpec {
		return cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: baseURL}}
	}
	base := cabpiv1.IgnitionConfigSpec{
		Variant:    cabpiv1.VariantFlatcar,
		Butane:     cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\n"},
		Files:      []cabpiv1.File{{Path: "/etc/motd", Content: "hello"}},
		Kubernetes: sysext("https://mirror-a.example/extensions"),
	}
	tests := []struct {
		name   string
		old    func(*cabpiv1.IgnitionConfigSpec)
		change func(*cabpiv1.IgnitionConfigSpec)
		want   []string
	}{
		{name: "nothing changed", change: func(*cabpiv1.IgnitionConfigSpec) {}},
		{name: "sysext mirror", change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Sysext.BaseURL = "https://mirror-b.example/x" }},
		{name: "the digests, with the mirror", change: func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes.Sysext.BaseURL = "https://mirror-b.example/x"
			s.Kubernetes.DigestsFrom = &cabpiv1.DigestsSource{Secret: &cabpiv1.KeyReference{Name: "mirror-b", Key: "SHA256SUMS"}}
		}},
		{name: "sysext mirror set to the default (unset)", change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Sysext = nil }},
		{name: "sysext mirror set where there was no sysext block",
			old:    func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Sysext = nil },
			change: func(s *cabpiv1.IgnitionConfigSpec) {}},
		{name: "binaries mirror",
			old:    func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = binaries("https://a.example/release") },
			change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = binaries("https://b.example/release") }},
		{name: "nil and empty lists are the same",
			old:    func(s *cabpiv1.IgnitionConfigSpec) { s.Users = nil },
			change: func(s *cabpiv1.IgnitionConfigSpec) { s.Users = []cabpiv1.User{} }},

		{name: "butane", change: func(s *cabpiv1.IgnitionConfigSpec) { s.Butane.Inline += "# more\n" },
			want: []string{"spec.butane"}},
		{name: "files", change: func(s *cabpiv1.IgnitionConfigSpec) { s.Files[0].Content = "bye" },
			want: []string{"spec.files"}},
		{name: "variant and pre-kubeadm commands, in the spec's order",
			change: func(s *cabpiv1.IgnitionConfigSpec) {
				s.PreKubeadmCommands = []string{"true"}
				s.Variant = cabpiv1.VariantFCOS
			},
			want: []string{"spec.variant", "spec.preKubeadmCommands"}},
		{name: "source from sysext to binaries, with the mirror",
			change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = binaries("https://b.example/release") },
			want:   []string{"spec.kubernetes.source", "spec.kubernetes.sysext.baseURL", "spec.kubernetes.binaries.baseURL"}},
		{name: "source from image to sysext",
			old:    func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = cabpiv1.KubernetesSpec{} },
			change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = sysext("") },
			want:   []string{"spec.kubernetes.source"}},
		{name: "the binaries mirror of a sysext source is not its mirror",
			change: func(s *cabpiv1.IgnitionConfigSpec) {
				s.Kubernetes.Binaries = &cabpiv1.BinariesSource{BaseURL: "https://b.example"}
			},
			want: []string{"spec.kubernetes.binaries.baseURL"}},
		{name: "a mirror of source image",
			old: func(s *cabpiv1.IgnitionConfigSpec) {
				s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage}
			},
			change: func(s *cabpiv1.IgnitionConfigSpec) {
				s.Kubernetes.Sysext = &cabpiv1.SysextSource{BaseURL: "https://b.example"}
			},
			want: []string{"spec.kubernetes.sysext.baseURL"}},
		{name: "sysupdate, with the mirror",
			change: func(s *cabpiv1.IgnitionConfigSpec) {
				s.Kubernetes.Sysext.Sysupdate = true
				s.Kubernetes.Sysext.BaseURL = "https://mirror-b.example/x"
			},
			want: []string{"spec.kubernetes.sysext.sysupdate"}},
		{name: "kubectl",
			old:    func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes = binaries("") },
			change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Binaries.Kubectl = true },
			want:   []string{"spec.kubernetes.binaries.kubectl"}},
		{name: "arch", change: func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Arch = cabpiv1.ArchitectureARM64 },
			want: []string{"spec.kubernetes.arch"}},
		{name: "verbosity", change: func(s *cabpiv1.IgnitionConfigSpec) { v := int32(5); s.Verbosity = &v },
			want: []string{"spec.verbosity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldSpec := *base.DeepCopy()
			if tt.old != nil {
				tt.old(&oldSpec)
			}
			newSpec := *oldSpec.DeepCopy()
			tt.change(&newSpec)

			got := ChangedOutsideInPlace(oldSpec, newSpec)
			assert.Equal(t, tt.want, pathStrings(got))
			assert.Equal(t, tt.want, pathStrings(ChangedOutsideInPlace(newSpec, oldSpec)), "the other way round")

			oldHash, err := SpecHash(oldSpec)
			require.NoError(t, err)
			newHash, err := SpecHash(newSpec)
			require.NoError(t, err)
			assert.Equal(t, len(tt.want) == 0, oldHash == newHash, "SpecHash agrees with ChangedOutsideInPlace")
		})
	}
}

// OutsideInPlace does not change the spec it is given (the controller hashes the config it
// reconciles).
func TestOutsideInPlaceLeavesItsArgument(t *testing.T) {
	spec := cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example"}}}
	out := OutsideInPlace(spec)
	assert.Nil(t, out.Kubernetes.Sysext)
	assert.Equal(t, "https://mirror.example", spec.Kubernetes.Sysext.BaseURL)
}

func pathStrings(paths []*field.Path) []string {
	var out []string
	for _, p := range paths {
		out = append(out, p.String())
	}
	return out
}

// accept is the rule: desired's mirror is taken only between two specs of one source updated in
// place, in desired's form (an absent block for a default mirror stays absent); nothing else of
// desired is.
func TestAccept(t *testing.T) {
	withButane := func(s *cabpiv1.IgnitionConfigSpec) *cabpiv1.IgnitionConfigSpec {
		s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\n"
		return s
	}
	tests := []struct {
		name             string
		current, desired *cabpiv1.IgnitionConfigSpec
		want             *cabpiv1.IgnitionConfigSpec
	}{
		{"the sysext mirror", sysextSpec("https://a.example"), sysextSpec("https://b.example"), sysextSpec("https://b.example")},
		{"the binaries mirror to the default", binariesSpec("https://a.example"), binariesSpec(""), binariesSpec("")},
		{"the mirror, not the Butane", sysextSpec("https://a.example"), withButane(sysextSpec("https://b.example")), sysextSpec("https://b.example")},
		{"another source: nothing", sysextSpec("https://a.example"), binariesSpec("https://b.example"), sysextSpec("https://a.example")},
		{"the image source: nothing", &cabpiv1.IgnitionConfigSpec{}, withButane(&cabpiv1.IgnitionConfigSpec{}), &cabpiv1.IgnitionConfigSpec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := *tt.current.DeepCopy()
			assert.Equal(t, *tt.want, accept(*tt.current, *tt.desired))
			assert.Equal(t, current, *tt.current, "current is not changed")
		})
	}
}
