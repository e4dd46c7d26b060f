package ignition_test

import (
	"errors"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// FuzzRender feeds arbitrary Butane, commands, file paths and versions to Render: it must never
// panic, every error must be an *ignition.Error (input errors, never internal ones), and every
// success must be Ignition a node accepts. `make fuzz` runs it; `go test` runs the seeds.
func FuzzRender(f *testing.F) {
	f.Add(flatcarSnippet, "echo pre", "/etc/x", "", "v1.34.0", false)
	f.Add(fcosSnippet, "", "/etc/kubeadm.yml", "3.4.0", "v1.30.0", true)
	f.Add("variant: flatcar\nversion: 1.1.0\nstorage: {files: [{path: /etc/a, contents: {inline: x}}]}\n", "", "/etc/a", "", "1.31", true)
	f.Add("variant: fcos\nversion: 1.7.0\n", "a\nb", "relative", "3.6.0", "v1.35.0-rc.1", false)
	f.Add("{{", "", "", "9", "v0", false)
	f.Add("variant: flatcar\nversion: 1.0.0\nsystemd: {units: [{name: kubeadm.service}]}\n", "", "/", "", "v1.34.0", false)
	f.Fuzz(func(t *testing.T, butane, command, filePath, pin, kubernetesVersion string, strict bool) {
		for _, variant := range []ignition.Variant{ignition.VariantFlatcar, ignition.VariantFCOS} {
			in := joinInput(variant, kubernetesVersion)
			in.Butane, in.ButaneStrict, in.IgnitionVersion = butane, strict, pin
			in.PreKubeadmCommands = []string{command}
			in.Files = []ignition.File{{Path: filePath, Content: []byte(command), Mode: 0o600}}
			out, err := ignition.Render(in)
			if err != nil {
				var ierr *ignition.Error
				require.True(t, errors.As(err, &ierr), "not an input error: %v", err)
				require.Nil(t, out.Data)
				continue
			}
			_, rpt, err := ignconfig.Parse(out.Data)
			require.NoError(t, err, rpt.String())
			require.Equal(t, out.SpecVersion, specVersion(t, out.Data))
		}
	})
}

// BenchmarkRender measures one Machine's rendering (`go test -bench Render ./ignition`), the
// unit of work a large MachineDeployment multiplies.
func BenchmarkRender(b *testing.B) {
	for name, in := range map[string]ignition.Input{
		"worker-flatcar": joinInput(ignition.VariantFlatcar, "v1.34.0"),
		"worker-fcos-snippet": func() ignition.Input {
			in := joinInput(ignition.VariantFCOS, "v1.34.0")
			in.Butane = fcosSnippet
			return in
		}(),
		"init-flatcar-with-pki": initInput(ignition.VariantFlatcar, "v1.34.0"),
	} {
		b.Run(name, func(b *testing.B) {
			var size int
			for b.Loop() {
				out, err := ignition.Render(in)
				if err != nil {
					b.Fatal(err)
				}
				size = out.Size.Bytes
			}
			b.ReportMetric(float64(size), "bytes/config")
		})
	}
}
