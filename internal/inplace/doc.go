// Package inplace is cabpi's in-place update extension (Cluster API's Runtime SDK hooks
// CanUpdateMachineSet and UpdateMachine, behind Cluster API's InPlaceUpdates
// feature gate): it takes a change of a Machine's Kubernetes version, and of its source's
// baseURL, for nodes whose IgnitionConfig installs Kubernetes from a system extension or the
// release binaries, and moves the running node to the new version without replacing it
// (docs/adr/035, 038). Everything else it declines, and Cluster API rolls it out by replacement.
//
// decide.go is the pure decision of the CanUpdate hooks; fields.go the one home of which
// IgnitionConfig fields an in-place update may change (admission uses it too); handlers.go the
// hooks; gather.go what UpdateMachine acts on, read from the API server, and what it refuses;
// update.go the executor of UpdateMachine; server.go the Runtime SDK server.
package inplace
