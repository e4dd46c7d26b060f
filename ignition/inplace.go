package ignition

import (
	"fmt"
	"strconv"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// An in-place update moves a running node to another Kubernetes version of the same source: a
// Pod hands the script to the host's systemd as the transient unit InPlaceUnit, which outlives
// the kubelet restart and the Pod, and keeps its state in InPlaceStateDir. The Pod mounts that
// directory at the same path, writes the script there and reads the result there.
// InPlaceFailedExitCode is cabpi update-node's exit code for an update that failed on the node
// (digests, kubeadm upgrade node, the kubelet), rolled back or never swapped: the update Job
// does not retry it. Any other failure of the command exits otherwise, and the Job retries it.
const InPlaceFailedExitCode = 1

const (
	// InPlaceStateDir holds the update's script (InPlaceScriptName), lock, journal, backup,
	// staged downloads and result (InPlaceResultName).
	InPlaceStateDir = "/var/lib/cabpi-update"
	// InPlaceUnit is the transient unit that runs the script on the host.
	InPlaceUnit = "cabpi-kubernetes-update.service"
	// InPlaceScriptName is the script's file name in InPlaceStateDir.
	InPlaceScriptName = "update.sh"
	// InPlaceResultName is the result's file name in InPlaceStateDir: one line, "ok <version>"
	// or "failed: <why>" (InPlaceResultOK).
	InPlaceResultName = "result"
	// InPlaceResultOK starts a successful update's result line.
	InPlaceResultOK = "ok "
)

// What the kubelet keeps that `kubeadm upgrade node` rewrites (written by kubeadm, read by the
// kubelet's drop-in, kubeletDropinOptions): the update backs them up and restores them when it
// rolls back.
const (
	kubeletConfigPath = "/var/lib/kubelet/config.yaml"
	kubeletFlagsPath  = "/var/lib/kubelet/kubeadm-flags.env"
	// kubeletHealthTimeout is how long the update waits for the restarted kubelet's health
	// endpoint, in seconds.
	kubeletHealthTimeout = 120
)

// InPlaceUpdate is what the update unit runs: /bin/bash with the script's path, then Args.
type InPlaceUpdate struct {
	// Script is the update script, the same for every version of a layout: the version and
	// where to fetch it from are in Args.
	Script []byte
	// Args are the script's arguments: the source (sysext or binaries), the version, then the
	// source's download locations (sysext: image file name, image URL, digest list URL;
	// binaries: the release directory's URL and the binaries' names).
	Args []string
}

// inPlaceLayout is where the update script finds and keeps things on the node. The node's is
// nodeInPlaceLayout, from the constants that first boot uses too; tests point it at temporary
// directories.
type inPlaceLayout struct {
	stateDir, sysextDir, sysextLink, binDir, kubeletConfig, kubeletFlags string
	healthTimeout                                                        int
}

var nodeInPlaceLayout = inPlaceLayout{
	stateDir:      InPlaceStateDir,
	sysextDir:     SysextDir,
	sysextLink:    SysextLink,
	binDir:        binDir,
	kubeletConfig: kubeletConfigPath,
	kubeletFlags:  kubeletFlagsPath,
	healthTimeout: kubeletHealthTimeout,
}

// InPlaceUpdateFor builds the update of a node whose Kubernetes comes from k to version. It
// checks k and version as first boot does (the same rules: a version the source's layout has,
// a base URL that can be fetched from); source image has nothing to swap in place, since kubeadm
// and the kubelet are part of the OS image. The errors are *Error (a *Report when there are
// several), placed as the renderer places them.
func InPlaceUpdateFor(k cabpiv1.KubernetesSpec, version string) (InPlaceUpdate, error) {
	source := kubernetesSource(k)
	if source == cabpiv1.KubernetesSourceImage {
		return InPlaceUpdate{}, errorf(ErrInvalidInput, At(PartKubernetes, KubernetesSource),
			"source image: kubeadm and the kubelet are part of the OS image, so there is nothing to swap in place; "+
				"the node has to be replaced with an image of the new version")
	}
	// The variant only matters to the bakery's default images on Fedora CoreOS, which a node
	// that booted with this spec does not have: Flatcar's rules are the rest of the checks.
	if errs := checkKubernetes(cabpiv1.VariantFlatcar, k, version); len(errs) > 0 {
		return InPlaceUpdate{}, &Report{Errors: errs}
	}
	script, err := inPlaceScript(nodeInPlaceLayout)
	if err != nil {
		return InPlaceUpdate{}, err
	}
	return InPlaceUpdate{Script: script, Args: inPlaceArgs(k, version)}, nil
}

// inPlaceArgs are the script's arguments for k and version (checked): the same download
// locations as first boot's (sysextInstall, binariesInstall), and for sysext the bakery's
// digest list, which systemd-sysupdate checks its images against.
func inPlaceArgs(k cabpiv1.KubernetesSpec, version string) []string {
	source := kubernetesSource(k)
	if source == cabpiv1.KubernetesSourceSysext {
		base := cabpiv1.DefaultSysextBaseURL
		if k.Sysext != nil && k.Sysext.BaseURL != "" {
			base = k.Sysext.BaseURL
		}
		name := SysextImageName(version, kubernetesArch(k))
		return []string{string(source), version, name, joinURL(base, name), joinURL(base, "kubernetes", "SHA256SUMS")}
	}
	base, names := releaseBinaries(k)
	return append([]string{string(source), version, joinURL(base, version, "bin", "linux", string(kubernetesArch(k)))}, names...)
}

// inPlaceScript composes the update script: inplace-update.sh (the steps), kubernetes-version.sh
// (the version check first boot runs too), then the layout's paths and the call of the steps
// with the script's arguments.
func inPlaceScript(l inPlaceLayout) ([]byte, error) {
	var b strings.Builder
	for _, name := range []string{"inplace-update.sh", "kubernetes-version.sh"} {
		data, err := scripts.ReadFile("scripts/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded script %s: %w", name, err)
		}
		b.Write(data)
	}
	call, err := shellCall([]string{"cabpi_inplace_layout", l.stateDir, l.sysextDir, l.sysextLink, l.binDir,
		l.kubeletConfig, l.kubeletFlags, strconv.Itoa(l.healthTimeout)})
	if err != nil {
		return nil, err
	}
	b.WriteString(call)
	b.WriteString(`cabpi_inplace_update "$@"` + "\n")
	return []byte(b.String()), nil
}
