// Package webhooks holds the admission webhooks of IgnitionConfig and IgnitionConfigTemplate:
// defaulting, validation with the renderer's own checks (so a bad Butane snippet is rejected at
// kubectl apply time with its location), and template immutability that lets the Cluster API
// topology controller's server-side-apply dry-runs through.
package webhooks
