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

package clc

import (
	"encoding/json"
	"testing"

	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	exp "github.com/coreos/ignition/v2/config/v3_7_experimental"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/normalize"
)

// Each Ignition 2.3 construct becomes the 3.3.0 that does what Ignition 2 did, or an error, or
// the same with a warning where 3.x means something slightly different. Inputs are 2.3 JSON as
// the transpiler emits it (and some it never does, which the translation takes all the same);
// outputs are compared pruned, as the renderer emits them.
func TestTranslateV2(t *testing.T) {
	cases := []struct {
		name string
		in   string
		// want is the 3.3.0 config without its ignition.version; empty when an error is wanted.
		want    string
		err     string
		warning string
	}{
		// Files.
		{name: "file with owner by id and name",
			in:   `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","mode":416,"contents":{"source":"data:,hi"},"user":{"id":500},"group":{"name":"core"}}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/x","mode":416,"overwrite":true,"contents":{"source":"data:,hi"},"user":{"id":500},"group":{"name":"core"}}]}}`},
		{name: "file without mode or source is empty with mode 0000, as Ignition 2 wrote it",
			in:   `{"storage":{"files":[{"filesystem":"root","path":"/etc/x"}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/x","mode":0,"overwrite":true,"contents":{"source":"data:,"}}]}}`},
		{name: "file that does not overwrite",
			in:   `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","overwrite":false,"mode":420,"contents":{"source":"data:,a"}}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/x","mode":420,"overwrite":false,"contents":{"source":"data:,a"}}]}}`},
		{name: "remote compressed verified file",
			in: `{"storage":{"files":[{"filesystem":"root","path":"/opt/bin/tool","mode":493,"contents":{"source":"https://example.com/tool.gz",` +
				`"compression":"gzip","verification":{"hash":"sha512-00"}}}]}}`,
			want: `{"storage":{"files":[{"path":"/opt/bin/tool","mode":493,"overwrite":true,"contents":{"source":"https://example.com/tool.gz",` +
				`"compression":"gzip","verification":{"hash":"sha512-00"}}}]}}`},
		{name: "appending file",
			in:   `{"storage":{"files":[{"filesystem":"root","path":"/etc/environment","append":true,"contents":{"source":"data:,A=1"}}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/environment","append":[{"source":"data:,A=1"}]}]}}`},
		{name: "appending file with overwrite false",
			in:      `{"storage":{"files":[{"filesystem":"root","path":"/etc/environment","append":true,"overwrite":false,"mode":420,"contents":{"source":"data:,A=1"}}]}}`,
			want:    `{"storage":{"files":[{"path":"/etc/environment","overwrite":false,"mode":420,"append":[{"source":"data:,A=1"}]}]}}`,
			warning: "Ignition 3 appends to it"},
		{name: "file written then appended to is one entry, mode and owner of the last",
			in: `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","mode":384,"contents":{"source":"data:,a"}},` +
				`{"filesystem":"root","path":"/etc/x","append":true,"mode":420,"user":{"name":"core"},"contents":{"source":"data:,b"}},` +
				`{"filesystem":"root","path":"/etc/./x","append":true,"contents":{"source":"data:,c"}}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/x","mode":420,"overwrite":true,"user":{"name":"core"},"contents":{"source":"data:,a"},` +
				`"append":[{"source":"data:,b"},{"source":"data:,c"}]}]}}`},
		{name: "file written twice alike is one entry",
			in: `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","mode":420,"contents":{"source":"data:,a"}},` +
				`{"filesystem":"root","path":"/etc/x","mode":420,"contents":{"source":"data:,a"}}]}}`,
			want: `{"storage":{"files":[{"path":"/etc/x","mode":420,"overwrite":true,"contents":{"source":"data:,a"}}]}}`},
		{name: "file written twice differently",
			in: `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","mode":420,"contents":{"source":"data:,a"}},` +
				`{"filesystem":"root","path":"/etc/x","mode":420,"contents":{"source":"data:,b"}}]}}`,
			err: "file /etc/x is written again by a later entry"},
		{name: "oem source",
			in:  `{"storage":{"files":[{"filesystem":"root","path":"/etc/x","mode":420,"contents":{"source":"oem:///x"}}]}}`,
			err: "no oem:// scheme"},

		// Filesystems and where their files go.
		{name: "files on a filesystem under /sysroot: paths and hard link targets move, symbolic link targets stay",
			in: `{"storage":{"filesystems":[{"name":"var","path":"/sysroot/var"},{"name":"sysroot","path":"/sysroot/"}],` +
				`"files":[{"filesystem":"var","path":"/lib/x","mode":420,"contents":{"source":"data:,x"}},{"filesystem":"sysroot","path":"/etc/y","mode":420,"contents":{"source":"data:,y"}}],` +
				`"directories":[{"filesystem":"var","path":"/lib/d","mode":448}],` +
				`"links":[{"filesystem":"var","path":"/lib/hard","target":"/lib/x","hard":true},{"filesystem":"var","path":"/lib/soft","target":"/lib/x"}]}}`,
			want: `{"storage":{"files":[{"path":"/var/lib/x","mode":420,"overwrite":true,"contents":{"source":"data:,x"}},{"path":"/etc/y","mode":420,"overwrite":true,"contents":{"source":"data:,y"}}],` +
				`"directories":[{"path":"/var/lib/d","mode":448}],` +
				`"links":[{"path":"/var/lib/hard","target":"/var/lib/x","hard":true},{"path":"/var/lib/soft","target":"/lib/x"}]}}`},
		{name: "file on a filesystem outside /sysroot",
			in:  `{"storage":{"filesystems":[{"name":"tmp","path":"/mnt"}],"files":[{"filesystem":"tmp","path":"/x","mode":420}]}}`,
			err: "outside /sysroot"},
		{name: "file on a filesystem Ignition 2 mounted to write it",
			in: `{"storage":{"filesystems":[{"name":"oem","mount":{"device":"/dev/disk/by-label/OEM","format":"btrfs"}}],` +
				`"files":[{"filesystem":"oem","path":"/grub.cfg","mode":420}]}}`,
			err: `on filesystem "oem", which Ignition 2 mounted only to write it`},
		{name: "link on a filesystem that is not defined",
			in:  `{"storage":{"links":[{"filesystem":"data","path":"/x","target":"/y"}]}}`,
			err: `filesystem "data", which storage.filesystems does not define`},
		{name: "the last filesystem of a name places files",
			in: `{"storage":{"filesystems":[{"name":"d","path":"/mnt"},{"name":"d","path":"/sysroot/srv"}],` +
				`"directories":[{"filesystem":"d","path":"/www","mode":493}]}}`,
			want: `{"storage":{"directories":[{"path":"/srv/www","mode":493}]}}`},
		{name: "filesystem to create",
			in: `{"storage":{"filesystems":[{"name":"data","mount":{"device":"/dev/sdb1","format":"xfs","label":"data",` +
				`"uuid":"6f3b1d5e-0c1a-4b8e-9a3f-2d4c5b6a7e8f","options":["-m","crc=1"],"wipeFilesystem":true}}]}}`,
			want: `{"storage":{"filesystems":[{"device":"/dev/sdb1","format":"xfs","label":"data",` +
				`"uuid":"6f3b1d5e-0c1a-4b8e-9a3f-2d4c5b6a7e8f","options":["-m","crc=1"],"wipeFilesystem":true}]}}`},
		{name: "filesystem created with force is wiped",
			in:   `{"storage":{"filesystems":[{"name":"data","mount":{"device":"/dev/sdb1","format":"ext4","create":{"force":true,"options":["-E","lazy_itable_init=0"]}}}]}}`,
			want: `{"storage":{"filesystems":[{"device":"/dev/sdb1","format":"ext4","options":["-E","lazy_itable_init=0"],"wipeFilesystem":true}]}}`},
		{name: "filesystem created without force is reused",
			in:      `{"storage":{"filesystems":[{"name":"data","mount":{"device":"/dev/sdb1","format":"ext4","create":{}}}]}}`,
			want:    `{"storage":{"filesystems":[{"device":"/dev/sdb1","format":"ext4"}]}}`,
			warning: "Ignition 3 reuses a filesystem of the same format"},
		{name: "filesystem on one device twice, differently",
			in: `{"storage":{"filesystems":[{"name":"a","mount":{"device":"/dev/sdb1","format":"ext4"}},` +
				`{"name":"b","mount":{"device":"/dev/sdb1","format":"xfs"}}]}}`,
			err: "filesystem device /dev/sdb1 is defined again, differently"},

		// Directories, links, disks, RAID.
		{name: "directory without mode is 0000, as Ignition 2 made it",
			in:   `{"storage":{"directories":[{"filesystem":"root","path":"/opt/d","overwrite":true,"user":{"id":0},"group":{"id":0}}]}}`,
			want: `{"storage":{"directories":[{"path":"/opt/d","mode":0,"overwrite":true,"user":{"id":0},"group":{"id":0}}]}}`},
		{name: "links",
			in: `{"storage":{"links":[{"filesystem":"root","path":"/etc/localtime","target":"/usr/share/zoneinfo/UTC","overwrite":true},` +
				`{"filesystem":"root","path":"/opt/bin/b","target":"/opt/bin/a","hard":true,"user":{"name":"core"}}]}}`,
			want: `{"storage":{"links":[{"path":"/etc/localtime","target":"/usr/share/zoneinfo/UTC","overwrite":true},` +
				`{"path":"/opt/bin/b","target":"/opt/bin/a","hard":true,"user":{"name":"core"}}]}}`},
		{name: "disk and partitions",
			in: `{"storage":{"disks":[{"device":"/dev/sdb","wipeTable":true,"partitions":[{"label":"data","number":1,"sizeMiB":1024,"startMiB":0,` +
				`"typeGuid":"0fc63daf-8483-4772-8e79-3d69d8477de4","guid":"8a2b1c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","wipePartitionEntry":true},{"number":9,"shouldExist":false}]}]}}`,
			want: `{"storage":{"disks":[{"device":"/dev/sdb","wipeTable":true,"partitions":[{"label":"data","number":1,"sizeMiB":1024,"startMiB":0,` +
				`"typeGuid":"0fc63daf-8483-4772-8e79-3d69d8477de4","guid":"8a2b1c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","wipePartitionEntry":true},{"number":9,"shouldExist":false}]}]}}`},
		{name: "partition sized in sectors",
			in:  `{"storage":{"disks":[{"device":"/dev/sdb","partitions":[{"number":1,"size":2048}]}]}}`,
			err: "in sectors"},
		{name: "RAID array",
			in:   `{"storage":{"raid":[{"name":"md0","level":"raid1","devices":["/dev/sdb1","/dev/sdc1"],"spares":1,"options":["--assume-clean"]}]}}`,
			want: `{"storage":{"raid":[{"name":"md0","level":"raid1","devices":["/dev/sdb1","/dev/sdc1"],"spares":1,"options":["--assume-clean"]}]}}`},

		// systemd and networkd.
		{name: "units: enable is enabled, empty drop-ins are none",
			in: `{"systemd":{"units":[{"name":"a.service","enable":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},` +
				`{"name":"b.service","enabled":false,"mask":true},{"name":"c.service","dropins":[{"name":"10-x.conf","contents":"[Service]\nNice=5\n"},{"name":"20-empty.conf"}]}]}}`,
			want: `{"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},` +
				`{"name":"b.service","enabled":false,"mask":true},{"name":"c.service","dropins":[{"name":"10-x.conf","contents":"[Service]\nNice=5\n"},{"name":"20-empty.conf"}]}]}}`},
		{name: "unit enabled and disabled at once",
			in:  `{"systemd":{"units":[{"name":"a.service","enable":true,"enabled":false}]}}`,
			err: "both enable: true and enabled: false"},
		{name: "entries of one unit are one unit",
			in: `{"systemd":{"units":[{"name":"docker.service","enable":true,"dropins":[{"name":"20-clct-docker.conf","contents":"[Service]\nA=1\n"}]},` +
				`{"name":"docker.service","contents":"[Service]\n","dropins":[{"name":"10-x.conf","contents":"[Service]\nB=1\n"},{"name":"20-clct-docker.conf","contents":"[Service]\nA=1\n"}]}]}}`,
			want: `{"systemd":{"units":[{"name":"docker.service","enabled":true,"contents":"[Service]\n",` +
				`"dropins":[{"name":"20-clct-docker.conf","contents":"[Service]\nA=1\n"},{"name":"10-x.conf","contents":"[Service]\nB=1\n"}]}]}}`},
		{name: "entries of one unit with different contents",
			in:  `{"systemd":{"units":[{"name":"a.service","contents":"[Service]\n"},{"name":"a.service","contents":"[Unit]\n"}]}}`,
			err: "unit a.service is defined again and both entries set different contents"},
		{name: "entries of one unit enabling and disabling it",
			in:  `{"systemd":{"units":[{"name":"a.service","enabled":true},{"name":"a.service","enabled":false}]}}`,
			err: "one entry enables it, the other disables it"},
		{name: "entries of one unit with different drop-ins of one name",
			in: `{"systemd":{"units":[{"name":"a.service","dropins":[{"name":"x.conf","contents":"[Unit]\n"}]},` +
				`{"name":"a.service","dropins":[{"name":"x.conf","contents":"[Service]\n"}]}]}}`,
			err: "both entries set drop-in x.conf, differently"},
		{name: "networkd units are files",
			in: `{"networkd":{"units":[{"name":"00-eth0.network","contents":"[Match]\nName=eth0\n","dropins":[{"name":"10-dns.conf","contents":"[Network]\nDNS=1.1.1.1\n"},{"name":"20-empty.conf"}]},` +
				`{"name":"10-only-dropin.network","dropins":[{"name":"mtu.conf","contents":"[Link]\nMTUBytes=9000\n"}]}]}}`,
			want: `{"storage":{"files":[` +
				`{"path":"/etc/systemd/network/00-eth0.network","mode":420,"overwrite":true,"contents":{"source":"data:,%5BMatch%5D%0AName=eth0%0A"}},` +
				`{"path":"/etc/systemd/network/00-eth0.network.d/10-dns.conf","mode":420,"overwrite":true,"contents":{"source":"data:,%5BNetwork%5D%0ADNS=1.1.1.1%0A"}},` +
				`{"path":"/etc/systemd/network/10-only-dropin.network.d/mtu.conf","mode":420,"overwrite":true,"contents":{"source":"data:,%5BLink%5D%0AMTUBytes=9000%0A"}}]}}`},
		{name: "networkd unit over a file of the config",
			in: `{"storage":{"files":[{"filesystem":"root","path":"/etc/systemd/network/00-eth0.network","mode":420,"contents":{"source":"data:,x"}}]},` +
				`"networkd":{"units":[{"name":"00-eth0.network","contents":"[Match]\n"}]}}`,
			err: "file /etc/systemd/network/00-eth0.network is written again"},

		// passwd.
		{name: "users and groups",
			in: `{"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core"],"passwordHash":"$6$x"},` +
				`{"name":"ops","uid":1001,"gecos":"Ops","homeDir":"/home/ops","noCreateHome":true,"primaryGroup":"ops","groups":["wheel"],` +
				`"noUserGroup":true,"noLogInit":true,"shell":"/bin/bash","system":true}],` +
				`"groups":[{"name":"ops","gid":1001,"passwordHash":"*","system":true}]}}`,
			want: `{"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core"],"passwordHash":"$6$x"},` +
				`{"name":"ops","uid":1001,"gecos":"Ops","homeDir":"/home/ops","noCreateHome":true,"primaryGroup":"ops","groups":["wheel"],` +
				`"noUserGroup":true,"noLogInit":true,"shell":"/bin/bash","system":true}],` +
				`"groups":[{"name":"ops","gid":1001,"passwordHash":"*","system":true}]}}`},
		{name: "a user's create section is the user's fields",
			in: `{"passwd":{"users":[{"name":"app","sshAuthorizedKeys":["ssh-ed25519 AAAA app"],"create":{"uid":1500,"gecos":"App","homeDir":"/var/app",` +
				`"noCreateHome":true,"primaryGroup":"app","groups":["docker"],"noUserGroup":true,"noLogInit":true,"shell":"/sbin/nologin","system":true}}]}}`,
			want: `{"passwd":{"users":[{"name":"app","sshAuthorizedKeys":["ssh-ed25519 AAAA app"],"uid":1500,"gecos":"App","homeDir":"/var/app",` +
				`"noCreateHome":true,"primaryGroup":"app","groups":["docker"],"noUserGroup":true,"noLogInit":true,"shell":"/sbin/nologin","system":true}]}}`},
		{name: "user twice, differently",
			in:  `{"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["a"]},{"name":"core","sshAuthorizedKeys":["b"]}]}}`,
			err: "user core is defined again, differently"},

		// The ignition section.
		{name: "config references, timeouts and certificate authorities",
			in: `{"ignition":{"config":{"append":[{"source":"https://example.com/a.ign","verification":{"hash":"sha512-aa"}}],"replace":{"source":"https://example.com/r.ign"}},` +
				`"timeouts":{"httpResponseHeaders":20,"httpTotal":600},"security":{"tls":{"certificateAuthorities":[{"source":"data:,ca"}]}}}}`,
			want: `{"ignition":{"config":{"merge":[{"source":"https://example.com/a.ign","verification":{"hash":"sha512-aa"}}],"replace":{"source":"https://example.com/r.ign"}},` +
				`"timeouts":{"httpResponseHeaders":20,"httpTotal":600},"security":{"tls":{"certificateAuthorities":[{"source":"data:,ca"}]}}}}`},
		{name: "certificate authority from the OEM partition",
			in:  `{"ignition":{"security":{"tls":{"certificateAuthorities":[{"source":"oem:///ca.pem"}]}}}}`,
			err: "no oem:// scheme"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in v2types.Config
			require.NoError(t, json.Unmarshal([]byte(tc.in), &in))
			before := tc.in
			got, warnings, cerr := translateV2(in, locator{})
			again, err := json.Marshal(in)
			require.NoError(t, err)
			require.JSONEq(t, normalizedJSON(t, before), normalizedJSON(t, string(again)), "the input was modified")

			if tc.err != "" {
				// The renderer reports every *Error as ErrInvalidContainerLinuxConfig at the
				// input's Container Linux Config (ignition's TestCLCErrorsAndWarningsArePlaced).
				require.NotNil(t, cerr, "want an error")
				assert.Contains(t, cerr.Message, tc.err)
				return
			}
			require.Nil(t, cerr)
			if tc.warning == "" {
				assert.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0].Message, tc.warning)
			}
			assert.Equal(t, SpecVersion, got.Ignition.Version)
			assertNewestSpec(t, got)
			got.Ignition.Version = ""
			data, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, normalizedJSON(t, tc.want), normalizedJSON(t, string(data)))
		})
	}
}

// assertNewestSpec checks that Newest, which the renderer reads the snippet with after its one
// parse, is what Ignition's ParseCompatibleVersion makes of the same 3.3.0 config.
func assertNewestSpec(t *testing.T, cfg v3types.Config) {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	parsed, _, err := v3_3.Parse(raw)
	if err != nil {
		return // some inputs are refused at 3.3.0 (the renderer reports that)
	}
	want, _, err := exp.ParseCompatibleVersion(raw)
	require.NoError(t, err)
	assert.Equal(t, want, Newest(parsed))
}

// normalizedJSON is doc pruned the way the renderer prunes what it emits.
func normalizedJSON(t *testing.T, doc string) string {
	t.Helper()
	out, err := normalize.Config([]byte(doc))
	require.NoError(t, err)
	return string(out)
}
