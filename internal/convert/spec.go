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
	"fmt"
	"strings"

	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// convertSpec maps a KubeadmConfigSpec onto an IgnitionConfigSpec, reporting what it cannot
// carry to f. The kubeadm configurations are Cluster API's own types on both sides and are
// copied as they are.
func convertSpec(src *kubeadmv1.KubeadmConfigSpec, f *findings) (*cabpiv1.IgnitionConfigSpec, error) {
	spec := &cabpiv1.IgnitionConfigSpec{
		// CABPK's Ignition is Container Linux Config, which only Flatcar reads.
		Variant:              cabpiv1.VariantFlatcar,
		ClusterConfiguration: *src.ClusterConfiguration.DeepCopy(),
		InitConfiguration:    *src.InitConfiguration.DeepCopy(),
		JoinConfiguration:    *src.JoinConfiguration.DeepCopy(),
		Verbosity:            src.Verbosity,
	}
	cloudConfig := src.Format != kubeadmv1.Ignition
	if cloudConfig {
		format := string(src.Format)
		if format == "" {
			format = "unset, so cloud-config"
		}
		f.note("format", "the source renders cloud-config (%s), not Ignition: the converted config is Ignition for Flatcar; check the machine images and the commands, which cloud-init ran", format)
	}
	spec.PreKubeadmCommands = convertCommands("preKubeadmCommands", src.PreKubeadmCommands, cloudConfig, f)
	spec.PostKubeadmCommands = convertCommands("postKubeadmCommands", src.PostKubeadmCommands, cloudConfig, f)
	for i := range src.BootCommands {
		f.lossy(fmt.Sprintf("bootCommands[%d]", i), "cloud-init's bootcmd runs early on every boot; Ignition runs once, and preKubeadmCommands run once just before kubeadm: not carried (put it in a systemd unit of spec.butane, or in preKubeadmCommands if once is enough)")
	}
	spec.Files = convertFiles(src.Files, cloudConfig, f)
	users, sudoers := convertUsers(src.Users, cloudConfig, f)
	spec.Users = users
	for _, s := range sudoers {
		if i := fileIndex(spec.Files, s.file.Path); i >= 0 {
			f.lossy(s.path, "files[%d] writes %s already: the sudo rule is not carried; add %q to that file", i, s.file.Path, s.file.Content)
			continue
		}
		spec.Files = append(spec.Files, s.file)
	}
	prov, err := convertProvisioning(src, cloudConfig, f)
	if err != nil {
		return nil, err
	}
	clc := src.Ignition.ContainerLinuxConfig
	userCLC := clc.AdditionalConfig
	if userCLC != "" {
		// The flatcar-sysext flavors install Kubernetes from the CLC; spec.kubernetes does that
		// now, and the renderer refuses a snippet that writes its paths.
		userCLC, spec.Kubernetes, err = mapKubernetesSysext(userCLC, f)
		if err != nil {
			return nil, err
		}
	}
	switch {
	case userCLC != "":
		doc, err := mergeIntoCLC(userCLC, prov)
		if err != nil {
			// The CLC is not YAML we can extend: keep it as it is and say what is left out.
			f.lossy("ignition.containerLinuxConfig.additionalConfig", "%v: the ntp, diskSetup and mounts settings are not carried", err)
			doc = userCLC
		}
		spec.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{Inline: doc, Strict: ptr.Deref(clc.Strict, false)}
	case !prov.empty():
		doc, err := prov.butane()
		if err != nil {
			return nil, err
		}
		spec.Butane = cabpiv1.ButaneSpec{Inline: doc}
	}
	if clc.AdditionalConfig == "" && clc.Strict != nil && *clc.Strict {
		f.note("ignition.containerLinuxConfig.strict", "there is no additionalConfig for it to apply to")
	}
	return spec, nil
}

func fileIndex(files []cabpiv1.File, path string) int {
	for i, f := range files {
		if f.Path == path {
			return i
		}
	}
	return -1
}

// convertFiles copies files; the fields mean the same on both sides.
func convertFiles(src []kubeadmv1.File, cloudConfig bool, f *findings) []cabpiv1.File {
	var out []cabpiv1.File
	for i, s := range src {
		path := fmt.Sprintf("files[%d]", i)
		if j := fileIndex(out, s.Path); j >= 0 {
			f.lossy(path, "a second file at %s: Ignition writes each path once; merge it into the first (files[%d])", s.Path, j)
			continue
		}
		file := cabpiv1.File{
			Path:        s.Path,
			Owner:       s.Owner,
			Permissions: s.Permissions,
			Content:     s.Content,
			Encoding:    cabpiv1.FileEncoding(s.Encoding),
			Append:      ptr.Deref(s.Append, false),
		}
		if s.ContentFrom.IsDefined() {
			file.ContentFrom = &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: s.ContentFrom.Secret.Name, Key: s.ContentFrom.Secret.Key}}
		}
		if cloudConfig && hasJinja(s.Content) {
			f.lossy(path+".content", "CABPK's cloud-config is a Jinja template that cloud-init renders ({{ }}); nothing renders it on Ignition: the content is written as it is")
		}
		if s.ContentFormat == kubeadmv1.FileContentFormatTemplate {
			f.lossy(path+".contentFormat", "cabpi does not render file templates: the content is written as it is, {{ }} included")
		}
		out = append(out, file)
	}
	return out
}

// convertCommands copies commands. CABPK's cloud-config is a Jinja template ("## template: jinja")
// that cloud-init renders with the instance's data; a command using it would run with the
// braces on Ignition, so it is not carried.
func convertCommands(field string, commands []string, cloudConfig bool, f *findings) []string {
	var out []string
	for i, c := range commands {
		if cloudConfig && hasJinja(c) {
			f.lossy(fmt.Sprintf("%s[%d]", field, i), "cloud-init renders {{ }} in CABPK's cloud-config as Jinja (instance data such as ds.meta_data); nothing renders it on Ignition: not carried (spec.nodeName names the node from metadata)")
			continue
		}
		out = append(out, c)
	}
	return out
}

func hasJinja(s string) bool {
	open := strings.Index(s, "{{")
	return open >= 0 && strings.Contains(s[open:], "}}") || strings.Contains(s, "{%")
}
