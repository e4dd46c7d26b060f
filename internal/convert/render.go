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
	"io"
	"slices"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// Roles are the roles a converted spec can be rendered for: init and control-plane join for a
// control-plane config (an init or cluster configuration, or a join with controlPlane), worker for
// a worker's join, and all three for a config that says nothing (KubeadmControlPlane and the
// Machine decide).
func Roles(spec *cabpiv1.IgnitionConfigSpec) []ignition.Role {
	initConfig := spec.InitConfiguration.IsDefined() || spec.ClusterConfiguration.IsDefined()
	switch {
	case spec.JoinConfiguration.ControlPlane != nil:
		if initConfig {
			return []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
		}
		return []ignition.Role{ignition.RoleControlPlaneJoin}
	case initConfig:
		return []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
	case spec.JoinConfiguration.IsDefined():
		return []ignition.Role{ignition.RoleWorkerJoin}
	}
	return []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin, ignition.RoleWorkerJoin}
}

// renderWarnings renders the converted spec offline for each of its roles, as `cabpi render`
// does, and returns the renderer's warnings once each. A spec that does not render is an error:
// it would be refused at admission.
func renderWarnings(c Converted) ([]Finding, error) {
	prefix := "spec."
	if _, ok := c.Object.(*cabpiv1.IgnitionConfigTemplate); ok {
		prefix = "spec.template.spec."
	}
	var out []Finding
	for _, role := range Roles(c.Spec) {
		rendered, err := configinput.RenderOffline(context.Background(), c.Spec, role, configinput.DefaultKubernetesVersion, io.Discard)
		if err != nil {
			return nil, fmt.Errorf("%s: the converted config does not render (role %s): %w", c.Source, role, err)
		}
		for _, w := range rendered.Warnings {
			path := prefix + w.Place.String()
			w.Place = ignition.Place{} // the finding's path says it; the message is where in the document and what
			f := Finding{Severity: Warning, Object: c.Target, Path: path, Message: w.String()}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}
