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

package setup

// The diagnostics endpoint (--diagnostics-address, Cluster API's util/flags) serves metrics over
// HTTPS to callers the API server vouches for: each scrape's bearer token is checked with a
// TokenReview, and the caller's right to get /metrics with a SubjectAccessReview
// (controller-runtime's filters.WithAuthenticationAndAuthorization). config/rbac's
// metrics-reader ClusterRole is that right, for whoever scrapes (docs/adr/014-metrics.md).

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
