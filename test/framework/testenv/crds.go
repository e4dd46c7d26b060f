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

package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"
)

// ContractLabel is the CRD label through which Cluster API resolves the API version of a
// provider's kind from a ContractVersionedObjectReference (apiGroup + kind): key
// "cluster.x-k8s.io/v1beta2", value the served versions joined by "_".
var ContractLabel = clusterv1.GroupVersion.String()

// genericCRDs are CAPI's untyped/test provider CRDs (group infrastructure|bootstrap|controlplane|
// remediation .cluster.x-k8s.io, version v1beta2). builder already labels them with
// "cluster.x-k8s.io/v1beta2: v1beta2".
func genericCRDs() []*apiextensionsv1.CustomResourceDefinition {
	crds := []*apiextensionsv1.CustomResourceDefinition{
		builder.GenericInfrastructureClusterCRD,
		builder.GenericInfrastructureClusterTemplateCRD,
		builder.GenericInfrastructureMachineCRD,
		builder.GenericInfrastructureMachineTemplateCRD,
		builder.GenericInfrastructureMachinePoolCRD,
		builder.GenericInfrastructureMachinePoolTemplateCRD,
		builder.GenericBootstrapConfigCRD,
		builder.GenericBootstrapConfigTemplateCRD,
		builder.GenericControlPlaneCRD,
		builder.GenericControlPlaneTemplateCRD,
		builder.GenericRemediationCRD,
		builder.GenericRemediationTemplateCRD,
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(crds))
	for _, c := range crds {
		out = append(out, c.DeepCopy()) // builder's are package-level; envtest mutates what it installs
	}
	return out
}

// readCRDsWithContractLabel reads the CRDs in paths and adds the Cluster API contract label
// (cluster.x-k8s.io/v1beta2: <served versions>) where it is missing: controller-gen's bases lack
// it (kustomize adds it), and without it CAPI cannot resolve Machine.spec.bootstrap.configRef.
func readCRDsWithContractLabel(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	opts := envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		return nil, fmt.Errorf("testenv: reading CRDs from %v: %w", paths, err)
	}
	if len(opts.CRDs) == 0 {
		return nil, fmt.Errorf("testenv: no CRDs found in %v", paths)
	}
	for _, crd := range opts.CRDs {
		AddContractLabel(crd)
	}
	return opts.CRDs, nil
}

// AddContractLabel sets the "cluster.x-k8s.io/v1beta2" label of crd to its served versions joined
// by "_" (e.g. "v1alpha1"), unless the label is already there.
func AddContractLabel(crd *apiextensionsv1.CustomResourceDefinition) {
	if _, ok := crd.Labels[ContractLabel]; ok {
		return
	}
	var versions []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			versions = append(versions, v.Name)
		}
	}
	if crd.Labels == nil {
		crd.Labels = map[string]string{}
	}
	crd.Labels[ContractLabel] = strings.Join(versions, "_")
}

// capiCRDPaths are Cluster API's core CRDs: cluster.x-k8s.io, addons, ipam and
// runtime.cluster.x-k8s.io (ExtensionConfig, which Options.InPlaceUpdates' reconciler needs).
func capiCRDPaths(capiDir string) []string {
	return []string{filepath.Join(capiDir, "core", "config", "crd", "bases")}
}

// capiProviderCRDPaths are the CRDs of Cluster API's own kubeadm providers, when asked for.
// Their bases lack the contract label as ours do (kustomize adds it in a release), so they are
// read through readCRDsWithContractLabel: without it a Machine cannot resolve a KubeadmConfig.
func capiProviderCRDPaths(capiDir string, kubeadm, kubeadmControlPlane bool) []string {
	var paths []string
	if kubeadm {
		paths = append(paths, filepath.Join(capiDir, "bootstrap", "kubeadm", "config", "crd", "bases"))
	}
	if kubeadmControlPlane {
		paths = append(paths, filepath.Join(capiDir, "controlplane", "kubeadm", "config", "crd", "bases"))
	}
	return paths
}

// warmUpCRDStorage lists every served version of every CRD once. kube-apiserver creates a CRD's
// storage and watch cache on the first request; until the watch cache is initialized it answers
// watches with 429 Retry-After: 1s (ResilientWatchCacheInitialization, locked on since 1.34),
// and client-go's informers (watch-list) then lose a whole second per batch at manager start.
// Lists are served from etcd meanwhile, so this costs milliseconds and lets the caches initialize
// before the Manager's informers start.
func warmUpCRDStorage(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.ListKind}
			if gvk.Kind == "" {
				gvk.Kind = crd.Spec.Names.Kind + "List"
			}
			g.Go(func() error {
				l := &metav1.PartialObjectMetadataList{}
				l.SetGroupVersionKind(gvk)
				if err := c.List(ctx, l, client.Limit(1)); err != nil {
					return fmt.Errorf("testenv: warming up %s: %w", gvk, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// backdateCRDsEstablished moves the Established condition's lastTransitionTime of freshly
// installed CRDs a minute back. kube-apiserver sleeps 2s in every create of a custom resource
// whose CRD became Established less than 2s ago (customresource_handler.go: "justCreated", a
// guard for HA apiservers), so without this the first create of each kind right after start
// takes 2s. A status-only change does not rebuild the CRD's storage.
func backdateCRDsEstablished(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, crd := range crds {
		name := crd.Name
		g.Go(func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := &apiextensionsv1.CustomResourceDefinition{}
				if err := c.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
					return err
				}
				for i := range cur.Status.Conditions {
					cond := &cur.Status.Conditions[i]
					if cond.Type != apiextensionsv1.Established || cond.Status != apiextensionsv1.ConditionTrue ||
						time.Since(cond.LastTransitionTime.Time) > 3*time.Second {
						continue
					}
					cond.LastTransitionTime = metav1.NewTime(time.Now().Add(-time.Minute))
					return c.Status().Update(ctx, cur)
				}
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("testenv: backdating CRD Established conditions: %w", err)
	}
	return nil
}
