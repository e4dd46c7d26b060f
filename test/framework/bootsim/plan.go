package bootsim

// planEnv names the environment variable that tells a re-executed test binary it is the sandbox
// child, and where its plan is.
const planEnv = "CABPI_BOOTSIM_PLAN"

// childRefused is the child's exit status for harness errors and settings it does not simulate:
// its output is then the whole message.
const childRefused = 3

// plan is what the parent (Boot) hands the child: everything is decided before entering the
// namespaces, so the child needs nothing but this file.
type plan struct {
	Root        string            // the root ignition-apply wrote, on the host
	ScratchDir  string            // an empty host directory the child mounts its private tmpfs on
	Unit        string            // unit to start
	KubeadmDir  string            // where the stub kubeadm goes
	KubeadmExit int               // the stub's exit status
	RunFiles    map[string]string // files for the clean /run
	Hostname    string            // transient hostname
	Inspect     []string          // paths to report on
}
