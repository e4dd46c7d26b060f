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

// Command demo is `make demo`: a local control plane (envtest's kube-apiserver and etcd), Cluster
// API's Cluster, Machine, MachineSet and MachineDeployment controllers and cabpi in one process,
// and a cluster with one control-plane Machine and a MachineDeployment of two workers whose
// bootstrap.configRef points at an IgnitionConfigTemplate. It prints each Machine's role and
// data Secret, writes the rendered Ignition to _demo/ and applies one config with the real
// ignition-apply into _demo/root.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/vincent-petithory/dataurl"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	namespace   = "demo"
	clusterName = "demo"
	version     = "v1.34.0"
)

func main() {
	variant := flag.String("variant", "flatcar", "flatcar or fcos")
	out := flag.String("out", "_demo", "where the rendered Ignition and the applied root go")
	flag.Parse()
	if err := run(*variant, *out); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(variant, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	step("Starting a local control plane (kube-apiserver + etcd) with Cluster API's and cabpi's CRDs")
	env, err := testenv.Start(ctx, testenv.Options{
		ClusterController:           true,
		MachineController:           true,
		MachineSetController:        true,
		MachineDeploymentController: true,
	})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping:", err)
		}
	}()
	if err := env.SetupCabpi(setup.Options{Concurrency: 5, BootstrapTokenTTL: 15 * time.Minute}); err != nil {
		return err
	}
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	step("Cluster API (Cluster, Machine, MachineSet, MachineDeployment controllers) and cabpi are running")

	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	cluster, err := env.CreateCluster(ctx, namespace, clusterName)
	if err != nil {
		return err
	}
	if _, err := env.CreateWorkloadKubeconfigSecret(ctx, cluster); err != nil {
		return err
	}
	if err := env.MarkInfrastructureProvisioned(ctx, cluster); err != nil {
		return err
	}
	step("Created Cluster %s/%s (infrastructure provisioned; the local API server doubles as the workload cluster)", namespace, clusterName)

	cp, err := createControlPlaneMachine(ctx, c, cluster, variant)
	if err != nil {
		return err
	}
	step("Created control-plane Machine %s with IgnitionConfig %s (variant %s)", cp.Name, cp.Name, variant)
	if err := createWorkers(ctx, c, cluster, variant); err != nil {
		return err
	}
	step("Created MachineDeployment %s-md-0 (2 replicas) -> IgnitionConfigTemplate %s-workers", clusterName, clusterName)

	step("Waiting for the control-plane Machine's bootstrap data (kubeadm init)")
	if err := waitForData(ctx, c, func(m clusterv1.Machine) bool { return m.Name == cp.Name }, 1); err != nil {
		return err
	}
	step("Simulating the first node joining (a Node in the workload cluster); Cluster API marks the control plane initialized")
	if _, err := env.MarkMachineNodeJoined(ctx, cp); err != nil {
		return err
	}
	step("Waiting for the workers' bootstrap data (kubeadm join)")
	isWorker := func(m clusterv1.Machine) bool { _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; return !ok }
	if err := waitForData(ctx, c, isWorker, 2); err != nil {
		return err
	}
	return report(ctx, c, out)
}

func createControlPlaneMachine(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, variant string) (*clusterv1.Machine, error) {
	name := clusterName + "-cp-0"
	cfg := &cabpiv1.IgnitionConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName}},
		Spec:       cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.Variant(variant), Butane: cabpiv1.ButaneSpec{Inline: motdSnippet(variant, "control plane")}},
	}
	if err := c.Create(ctx, cfg); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, testenv.NewGenericInfraMachine(namespace, name)); err != nil {
		return nil, err
	}
	m := testenv.NewMachine(cluster, name, true)
	m.Spec.Version = version
	return m, c.Create(ctx, m)
}

func createWorkers(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, variant string) error {
	tmpl := &cabpiv1.IgnitionConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: clusterName + "-workers"},
		Spec: cabpiv1.IgnitionConfigTemplateSpec{Template: cabpiv1.IgnitionConfigTemplateResource{
			Spec: cabpiv1.IgnitionConfigSpec{
				Variant:            cabpiv1.Variant(variant),
				PreKubeadmCommands: []string{"systemctl enable --now containerd"},
				Butane:             cabpiv1.ButaneSpec{Inline: motdSnippet(variant, "worker")},
			},
		}},
	}
	if err := c.Create(ctx, tmpl); err != nil {
		return err
	}
	infraTmpl := builder.InfrastructureMachineTemplate(namespace, clusterName+"-workers").Build()
	if err := c.Create(ctx, infraTmpl); err != nil {
		return err
	}
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName, "demo.cabpi.io/pool": "md-0"}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: clusterName + "-md-0", Labels: labels},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: clusterName,
			Replicas:    ptr.To[int32](2),
			Selector:    metav1.LabelSelector{MatchLabels: labels},
			// Set explicitly: Cluster API's defaulting webhook does not run in this process.
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: clusterName,
					Version:     version,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfigTemplate", Name: tmpl.Name,
					}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: infraTmpl.GetName(),
					},
				},
			},
		},
	}
	return c.Create(ctx, md)
}

// motdSnippet is the provisioning part users bring: here just a message of the day.
func motdSnippet(variant, role string) string {
	version := "1.0.0"
	if variant == "fcos" {
		version = "1.5.0"
	}
	return fmt.Sprintf("variant: %s\nversion: %s\nstorage:\n  files:\n  - path: /etc/motd.d/cabpi.conf\n    mode: 0644\n    contents:\n      inline: |\n        This %s was bootstrapped by cabpi.\n", variant, version, role)
}

// waitForData waits until want Machines matching match have their bootstrap data, printing progress.
func waitForData(ctx context.Context, c client.Client, match func(clusterv1.Machine) bool, want int) error {
	last := ""
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		machines := &clusterv1.MachineList{}
		if err := c.List(ctx, machines, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		ready, total := 0, 0
		var waiting []string
		for _, m := range machines.Items {
			if !match(m) {
				continue
			}
			total++
			if ptr.Deref(m.Status.Initialization.BootstrapDataSecretCreated, false) {
				ready++
				continue
			}
			cfg := &cabpiv1.IgnitionConfig{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err == nil {
				for _, cond := range cfg.Status.Conditions {
					if cond.Type == cabpiv1.DataSecretAvailableCondition {
						waiting = append(waiting, fmt.Sprintf("%s: %s", m.Name, cond.Reason))
					}
				}
			}
		}
		sort.Strings(waiting)
		line := fmt.Sprintf("    %d/%d Machines have bootstrap data (%d exist) %v", ready, want, total, waiting)
		if line != last {
			fmt.Println(line)
			last = line
		}
		return ready >= want && total >= want, nil
	})
}

// report prints every Machine's role and Secret, writes the Ignition and applies one.
func report(ctx context.Context, c client.Client, out string) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(namespace)); err != nil {
		return err
	}
	sort.Slice(machines.Items, func(i, j int) bool { return machines.Items[i].Name < machines.Items[j].Name })
	step("Bootstrap data")
	fmt.Printf("    %-28s %-14s %-28s %s\n", "MACHINE", "ROLE", "SECRET", "IGNITION")
	var workerFile string
	for _, m := range machines.Items {
		name := ptr.Deref(m.Spec.Bootstrap.DataSecretName, "")
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
			return fmt.Errorf("data Secret of %s: %w", m.Name, err)
		}
		data := secret.Data["value"]
		role, specVersion, err := describe(data)
		if err != nil {
			return fmt.Errorf("Ignition of %s: %w", m.Name, err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, data, "", "  "); err != nil {
			return err
		}
		file := filepath.Join(out, m.Name+".ign")
		if err := os.WriteFile(file, pretty.Bytes(), 0o600); err != nil {
			return err
		}
		if role == "worker" && workerFile == "" {
			workerFile = file
		}
		fmt.Printf("    %-28s %-14s %-28s %s, %d bytes -> %s\n", m.Name, role, name, specVersion, len(data), file)
	}
	if workerFile == "" {
		return fmt.Errorf("no worker data rendered")
	}
	if err := printRedacted(workerFile); err != nil {
		return err
	}
	return applyOne(workerFile, filepath.Join(out, "root"))
}

// joinTokenPattern finds kubeadm bootstrap tokens ("abcdef.0123456789abcdef") inside file contents.
var joinTokenPattern = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)

// printRedacted prints a worker's Ignition as rendered (the config a wrapper carries, where the
// data is wrapped), with the join token inside its files replaced: the full config, token
// included, stays in the file under _demo/ (mode 0600).
func printRedacted(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	config, err := ignition.Unwrap(data)
	if err != nil {
		return err
	}
	contentOf, err := ignition.ReadFiles(config)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return err
	}
	storage, _ := cfg["storage"].(map[string]any)
	files, _ := storage["files"].([]any)
	for _, f := range files {
		entry, _ := f.(map[string]any)
		path, _ := entry["path"].(string)
		contents, _ := entry["contents"].(map[string]any)
		if content, ok := contentOf[path]; ok && joinTokenPattern.Match(content) {
			// Re-encoded uncompressed, so that the redaction shows.
			contents["source"] = dataurl.EncodeBytes(joinTokenPattern.ReplaceAll(content, []byte("REDACTED.join-token-redacted")))
			delete(contents, "compression")
		}
	}
	pretty, err := json.MarshalIndent(cfg, "    ", "  ")
	if err != nil {
		return err
	}
	step("Ignition of %s (join token redacted; the file has it)", file)
	fmt.Printf("    %s\n", pretty)
	return nil
}

// describe reads the role from the kubeadm config inside the Ignition.
func describe(data []byte) (role, specVersion string, err error) {
	if _, rpt, err := ignconfig.Parse(data); err != nil {
		return "", "", fmt.Errorf("%w: %s", err, rpt.String())
	}
	var raw struct {
		Ignition struct{ Version string } `json:"ignition"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", "", err
	}
	files, err := ignition.ReadFiles(data)
	if err != nil {
		return "", "", err
	}
	y, ok := files[ignition.KubeadmConfigPath]
	switch {
	case !ok:
		return "", "", fmt.Errorf("no %s", ignition.KubeadmConfigPath)
	case bytes.Contains(y, []byte("kind: InitConfiguration")):
		return "init", raw.Ignition.Version, nil
	case bytes.Contains(y, []byte("controlPlane:")):
		return "control-plane", raw.Ignition.Version, nil
	default:
		return "worker", raw.Ignition.Version, nil
	}
}

// applyOne runs the real ignition-apply on file into root and lists what it wrote.
func applyOne(file, root string) error {
	bin := os.Getenv("CABPI_IGNITION_APPLY")
	if bin == "" {
		outp, err := exec.Command("bash", "hack/ignition-apply.sh").Output()
		if err != nil {
			return fmt.Errorf("building ignition-apply: %w", err)
		}
		bin = strings.TrimSpace(string(outp))
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	step("Applying %s with ignition-apply into %s", file, root)
	cmd := exec.Command(bin, "--root", root, "--offline", file)
	if outp, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ignition-apply: %w\n%s", err, outp)
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Printf("    %s %s\n", info.Mode(), "/"+rel)
		return nil
	})
}
