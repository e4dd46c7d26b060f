// Package controllers holds the IgnitionConfig reconciler.
//
// A reconcile runs the Cluster API BootstrapConfig flow:
//
//  1. gather (reconciler.go, scope.go): the config, its Machine or MachinePool owner, the Cluster
//     and the data Secret, into a scope that no step changes after;
//  2. gate (reconcile.go): paused, data already delivered (delivered.go: rendered again in place
//     while the owner has not started provisioning, rerender.go; token refresh, or rotation for
//     pools, machinepool.go), infrastructure provisioned, control plane initialized, init lock
//     (init.go);
//  3. inputs (inputs.go, certificates.go): Kubernetes version, referenced Secrets and
//     ConfigMaps, certificates, resolved into a nodeInput (the renderer's input and its digest);
//  4. render and store (join.go, secret.go, token.go): ignition's render, the join token in the
//     workload cluster for data that renders, the data Secret;
//  5. report (status.go): the status and conditions, patched once on the way out (util/patch).
//
// Every step of 3 and 4 returns what it produced, or a report (why no data was stored: the
// DataSecretAvailable reason and message, and when to look again), or an error (retried with
// backoff; a conditionError also says what DataSecretAvailable says meanwhile), never two of
// them. The caller decides what a report means for the status: False on a first render, True
// with RerenderFailed for delivered data, nothing for a pool whose current token still works.
//
// Changes to referenced Secrets and ConfigMaps reach the configs that read them through a field
// index and label-selected watches (references.go).
//
// Role-specific decisions live in init.go (kubeadm init), join.go (control-plane and worker
// join) and machinepool.go (token rotation for pools).
package controllers
