// Package controllers holds the IgnitionConfig reconciler.
//
// A reconcile runs the Cluster API BootstrapConfig flow in five steps, each in its own file:
//
//  1. gather (scope.go): the config, its Machine or MachinePool owner and the Cluster;
//  2. gate (reconcile.go): paused, infrastructure provisioned, data already created (rendered
//     again in place while the owner has not started provisioning, rerender.go; token refresh /
//     rotation, token.go), control plane initialized, init lock (init.go);
//  3. inputs (inputs.go, certificates.go, token.go): Kubernetes version, referenced Secrets and
//     ConfigMaps, certificates, the join token — all resolved into an ignition.Input;
//  4. render: ignition.Render, pure;
//  5. store (secret.go): the data Secret, status and conditions (patched with util/patch).
//
// Changes to referenced Secrets and ConfigMaps reach the configs that read them through a field
// index and label-selected watches (references.go).
//
// Role-specific decisions live in init.go (kubeadm init), join.go (control-plane and worker
// join) and machinepool.go (token rotation for pools).
package controllers
