package setup

// The diagnostics endpoint (--diagnostics-address, Cluster API's util/flags) serves metrics over
// HTTPS to callers the API server vouches for: each scrape's bearer token is checked with a
// TokenReview, and the caller's right to get /metrics with a SubjectAccessReview
// (controller-runtime's filters.WithAuthenticationAndAuthorization). config/rbac's
// metrics-reader ClusterRole is that right, for whoever scrapes (docs/adr/014-metrics.md).

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
