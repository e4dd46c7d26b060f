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
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// fuzzValidateTimeout bounds one validateSpec: half the API server's default webhook timeout
// (10s), on a loaded machine, with the fuzzer's instrumentation.
const fuzzValidateTimeout = 5 * time.Second

// fuzzMinSecretLen is the length from which a token is taken for a secret that no field error
// may echo; shorter strings occur in messages by chance.
const fuzzMinSecretLen = 8

// fuzzFile is one file of FuzzValidateSpec's spec; a file without a path is left out.
type fuzzFile struct{ path, permissions, owner, content string }

// fuzzSpec builds the spec FuzzValidateSpec validates.
func fuzzSpec(variant, ignitionVersion, butane, clc string, strict bool, files []fuzzFile, pre, post, token string) *cabpiv1.IgnitionConfigSpec {
	spec := &cabpiv1.IgnitionConfigSpec{
		Variant:         cabpiv1.Variant(variant),
		IgnitionVersion: ignitionVersion,
		Butane:          cabpiv1.ButaneSpec{Inline: butane, Strict: strict},
	}
	if clc != "" {
		spec.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{Inline: clc, Strict: strict}
	}
	spec.JoinConfiguration.Discovery.BootstrapToken.Token = token
	for _, f := range files {
		if f.path != "" {
			spec.Files = append(spec.Files, cabpiv1.File{Path: f.path, Permissions: f.permissions, Owner: f.owner, Content: f.content})
		}
	}
	if pre != "" {
		spec.PreKubeadmCommands = []string{pre}
	}
	if post != "" {
		spec.PostKubeadmCommands = []string{post}
	}
	return spec
}

// fuzzOtherToken maps token to another string of the same shape (letters and digits rotated, so
// a valid bootstrap token stays valid), to tell a token echoed in a message from the same text
// coming from elsewhere.
func fuzzOtherToken(token string) string {
	b := []byte(token)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+5)%10
		}
	}
	return string(b)
}

// validateBounded runs validateSpec on a copy of spec, failing t if it panics, takes longer than
// fuzzValidateTimeout, or modifies the spec.
func validateBounded(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, p *field.Path, controlPlane bool) field.ErrorList {
	t.Helper()
	type result struct {
		errs  field.ErrorList
		panic string
	}
	work := spec.DeepCopy()
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panic: fmt.Sprintf("%v\n%s", r, debug.Stack())}
			}
		}()
		errs, _ := validateSpec(specCheck{spec: work, path: p, controlPlane: controlPlane,
			kubernetesVersion: configinput.DefaultKubernetesVersion})
		done <- result{errs: errs}
	}()
	select {
	case r := <-done:
		require.Empty(t, r.panic, "validateSpec panicked")
		require.Less(t, time.Since(start), fuzzValidateTimeout, "validateSpec took too long")
		require.True(t, equality.Semantic.DeepEqual(spec, work), "validateSpec modified the spec")
		return r.errs
	case <-time.After(fuzzValidateTimeout):
		require.FailNow(t, "validateSpec did not return", "after %s", fuzzValidateTimeout)
		return nil
	}
}

// FuzzValidateSpec builds an IgnitionConfigSpec from fuzz inputs (variant, pinned Ignition
// version, inline Butane, an inline Container Linux Config, two files, a pre- and a post-kubeadm command, a join token), validates
// it as a worker or a control-plane node, under spec or spec.template.spec. Invariants:
//   - validateSpec never panics, returns within fuzzValidateTimeout and leaves the spec alone;
//   - every field error's path is inside the spec's path, and none is an internal error;
//   - no field error echoes the join token (when it is at least fuzzMinSecretLen long): a
//     message containing it while the same spec with another token gives none is a leak;
//   - admission and rendering agree: validateSpec returns no error exactly when the spec renders
//     the way the controller would (configinput.RenderOffline) for every role the
//     node may have.
func FuzzValidateSpec(f *testing.F) {
	const token = configinput.PlaceholderToken
	const flatcar = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/sysctl.d/90-k8s.conf\n      contents:\n        inline: \"net.ipv4.ip_forward = 1\\n\"\n"
	const fcos = "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      dropins:\n        - name: 10-after.conf\n          contents: \"[Unit]\\nAfter=crio.service\\n\"\n"
	// variant, ignitionVersion, butane, clc, strict, 2x (path, permissions, owner, content), pre, post, token, controlPlane, template
	f.Add("flatcar", "", flatcar, "", false, "/etc/cabpi/hello", "0644", "core:core", "hello\n", "", "", "", "", "echo pre", "echo post", token, false, false)
	f.Add("fcos", "3.4.0", fcos, "", true, "/etc/cabpi/a", "", "", "a", "/etc/cabpi/b", "600", "500", "b", "", "", "", true, true)
	f.Add("", "3.3.0", "", "", false, "/etc/cabpi/a", "0999", "a:b:c", "", "/etc/cabpi//a", "0644", "", "", "", "", "secret-not-a-bootstrap-token", false, false)
	f.Add("flatcar", "9.9.9", "{{", "", false, "/etc/kubeadm.sh", "", "", "", "/etc/systemd/system/kubeadm.service.d/10-x.conf", "", "", "[Service]\nExecStart=\n", "echo 'unterminated", "if true; then", "abcdef.0123456789abcdeX", false, false)
	f.Add("fcos", "", "variant: flatcar\nversion: 1.0.0\n", "", false, "relative", "", "", "", "", "", "", "", "", "", token, true, false)
	f.Add("ubuntu", "", "", "", false, "", "", "", "", "", "", "", "", "", "", token, false, true)
	f.Add("flatcar", "", "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/kubernetes/pki/ca.key\n      contents:\n        inline: x\n", "", false, "/etc/cabpi/x", "", "", "", "", "", "", "", "", "", token, true, false)
	f.Add("fcos", "3.2.0", "variant: fcos\nversion: 1.5.0\n", "", false, "/etc/cabpi/x", "", "", "", "", "", "", "", "", "", "tok3n5.s3cr3tvalue00000", false, false)
	const clc = "storage:\n  files:\n    - path: /etc/cabpi/clc\n      filesystem: root\n      mode: 0644\n      contents:\n        inline: hi\n"
	f.Add("flatcar", "", "", clc, false, "", "", "", "", "", "", "", "", "", "", token, false, false)
	f.Add("flatcar", "", "", clc, true, "/etc/cabpi/clc", "", "", "x", "", "", "", "", "", "", token, true, true)
	f.Add("fcos", "", "", clc, false, "", "", "", "", "", "", "", "", "", "", token, false, false)
	f.Add("flatcar", "", flatcar, clc, false, "", "", "", "", "", "", "", "", "", "", token, false, false)
	f.Add("flatcar", "", "", "systemd:\n  units:\n    - name: kubeadm.service\n      enable: true\n", false, "", "", "", "", "", "", "", "", "", "", token, true, false)
	f.Add("flatcar", "", "", "a: &x [*x]\n", false, "", "", "", "", "", "", "", "", "", "", token, false, false)
	f.Fuzz(func(t *testing.T, variant, ignitionVersion, butane, clc string, strict bool,
		path0, permissions0, owner0, content0, path1, permissions1, owner1, content1 string,
		pre, post, token string, controlPlane, template bool,
	) {
		files := []fuzzFile{{path0, permissions0, owner0, content0}, {path1, permissions1, owner1, content1}}
		spec := fuzzSpec(variant, ignitionVersion, butane, clc, strict, files, pre, post, token)
		p := field.NewPath("spec")
		if template {
			p = field.NewPath("spec", "template", "spec")
		}
		errs := validateBounded(t, spec, p, controlPlane)

		for _, e := range errs {
			require.True(t, e.Field == p.String() || strings.HasPrefix(e.Field, p.String()+".") || strings.HasPrefix(e.Field, p.String()+"["),
				"field error outside %s: %v", p, e)
			require.NotEqual(t, field.ErrorTypeInternal, e.Type, "internal error: %v", e)
		}

		if other := fuzzOtherToken(token); len(token) >= fuzzMinSecretLen && other != token {
			var elsewhere bool
			for _, e := range validateBounded(t, fuzzSpec(variant, ignitionVersion, butane, clc, strict, files, pre, post, other), p, controlPlane) {
				elsewhere = elsewhere || strings.Contains(e.Error(), token)
			}
			for _, e := range errs {
				require.False(t, strings.Contains(e.Error(), token) && !elsewhere, "a field error echoes the join token: %v", e)
			}
		}

		roles := []ignition.Role{ignition.RoleWorkerJoin}
		if controlPlane {
			roles = []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
		}
		var renderErr error
		for _, role := range roles {
			if _, err := configinput.RenderOffline(context.Background(), spec.DeepCopy(), role, configinput.DefaultKubernetesVersion, io.Discard); err != nil {
				renderErr = fmt.Errorf("%s: %w", role, err)
				break
			}
		}
		if len(errs) == 0 {
			require.NoError(t, renderErr, "admission accepts a spec the controller cannot render")
		} else {
			require.Error(t, renderErr, "admission refuses a spec the controller renders: %v", errs)
		}
	})
}
