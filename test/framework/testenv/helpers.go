package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// KubernetesVersion is the spec.version NewMachine sets.
const KubernetesVersion = "v1.34.0"

// CreateNamespace creates a namespace named <prefix>-<random> and fails t on error. Namespaces
// are not deleted: envtest runs no namespace controller, so deletion would never finish anyway.
func (e *Environment) CreateNamespace(t testing.TB, prefix string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Annotations:  map[string]string{"testenv.cabpi.io/test": t.Name()},
	}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("testenv: creating namespace %q: %v", prefix, err)
	}
	return ns
}

// APIEndpoint is the envtest API server as a Cluster controlPlaneEndpoint (127.0.0.1:<port>).
func (e *Environment) APIEndpoint() clusterv1.APIEndpoint {
	host := e.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		panic(fmt.Sprintf("testenv: parsing envtest host %q: %v", e.Config.Host, err))
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = 443
	}
	return clusterv1.APIEndpoint{Host: u.Hostname(), Port: int32(port)} //nolint:gosec // a TCP port
}

// NewCluster returns (does not create) a v1beta2 Cluster whose controlPlaneEndpoint is the
// envtest API server and whose infrastructureRef is the GenericInfrastructureCluster of the same
// name (see NewGenericInfraCluster, CreateCluster). No controlPlaneRef: stand-alone control-plane
// Machines, as created by NewMachine(..., true).
func (e *Environment) NewCluster(namespace, name string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: e.APIEndpoint(),
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group,
				Kind:     builder.GenericInfrastructureClusterKind,
				Name:     name,
			},
		},
	}
}

// CreateCluster creates the GenericInfrastructureCluster and the Cluster of NewCluster, changed
// by mutate before it is created.
func (e *Environment) CreateCluster(ctx context.Context, namespace, name string, mutate ...func(*clusterv1.Cluster)) (*clusterv1.Cluster, error) {
	if err := e.Client.Create(ctx, NewGenericInfraCluster(namespace, name)); err != nil {
		return nil, fmt.Errorf("testenv: creating GenericInfrastructureCluster %s/%s: %w", namespace, name, err)
	}
	cluster := e.NewCluster(namespace, name)
	for _, m := range mutate {
		m(cluster)
	}
	if err := e.Client.Create(ctx, cluster); err != nil {
		return nil, fmt.Errorf("testenv: creating Cluster %s/%s: %w", namespace, name, err)
	}
	return cluster, nil
}

// CreateJoinableCluster makes a Cluster that Machines can join at once, as after its control
// plane came up: the workload kubeconfig Secret (the workload cluster is this API server), the
// cluster CA, infrastructure provisioned and control plane initialized.
func (e *Environment) CreateJoinableCluster(ctx context.Context, namespace, name string) (*clusterv1.Cluster, error) {
	cluster, err := e.CreateCluster(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if _, err := e.CreateWorkloadKubeconfigSecret(ctx, cluster); err != nil {
		return nil, err
	}
	if _, err := e.CreateClusterCA(ctx, cluster); err != nil {
		return nil, err
	}
	if err := e.MarkInfrastructureProvisioned(ctx, cluster); err != nil {
		return nil, err
	}
	if err := e.MarkControlPlaneInitialized(ctx, cluster); err != nil {
		return nil, err
	}
	return cluster, nil
}

// NewMachinePool returns (does not create) a MachinePool of cluster with replicas, version
// KubernetesVersion, whose bootstrap configRef is the IgnitionConfig name and whose
// infrastructureRef the GenericInfrastructureMachinePool name (builder.InfrastructureMachinePool).
func NewMachinePool(cluster *clusterv1.Cluster, name string, replicas int32) *clusterv1.MachinePool {
	return &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: cluster.Name,
			Replicas:    &replicas,
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: cluster.Name,
				Version:     KubernetesVersion,
				Bootstrap:   clusterv1.Bootstrap{ConfigRef: IgnitionConfigRef(name)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachinePoolKind, Name: name,
				},
			}},
		},
	}
}

// NewGenericInfraCluster returns a GenericInfrastructureCluster (infrastructure.cluster.x-k8s.io/v1beta2).
func NewGenericInfraCluster(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(builder.InfrastructureGroupVersion.String())
	u.SetKind(builder.GenericInfrastructureClusterKind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// NewGenericInfraMachine returns a GenericInfrastructureMachine (infrastructure.cluster.x-k8s.io/v1beta2).
func NewGenericInfraMachine(namespace, name string) *unstructured.Unstructured {
	return builder.InfrastructureMachine(namespace, name).Build()
}

// GenericInfraMachineRef references the GenericInfrastructureMachine name.
func GenericInfraMachineRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: builder.InfrastructureGroupVersion.Group,
		Kind:     builder.GenericInfrastructureMachineKind,
		Name:     name,
	}
}

// IgnitionConfigRef references the IgnitionConfig name (for Machine.spec.bootstrap.configRef).
func IgnitionConfigRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: cabpiv1.GroupVersion.Group,
		Kind:     "IgnitionConfig",
		Name:     name,
	}
}

// NewMachine returns (does not create) a Machine of cluster, version KubernetesVersion, whose
// bootstrap configRef is the IgnitionConfig and whose infrastructureRef the
// GenericInfrastructureMachine of the same name. controlPlane adds the control-plane label.
func NewMachine(cluster *clusterv1.Cluster, name string, controlPlane bool) *clusterv1.Machine {
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName:       cluster.Name,
			Version:           KubernetesVersion,
			Bootstrap:         clusterv1.Bootstrap{ConfigRef: IgnitionConfigRef(name)},
			InfrastructureRef: GenericInfraMachineRef(name),
		},
	}
}

// IgnitionConfigTemplateRef references the IgnitionConfigTemplate name.
func IgnitionConfigTemplateRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: cabpiv1.GroupVersion.Group,
		Kind:     "IgnitionConfigTemplate",
		Name:     name,
	}
}

// GenericInfraMachineTemplateRef references the GenericInfrastructureMachineTemplate name.
func GenericInfraMachineTemplateRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: builder.InfrastructureGroupVersion.Group,
		Kind:     builder.GenericInfrastructureMachineTemplateKind,
		Name:     name,
	}
}

// NewGenericInfraMachineTemplate returns a GenericInfrastructureMachineTemplate (with an empty
// spec.template.spec), what MachineSets clone GenericInfrastructureMachines from.
func NewGenericInfraMachineTemplate(namespace, name string) *unstructured.Unstructured {
	return builder.InfrastructureMachineTemplate(namespace, name).Build()
}

// NewMachineDeployment returns (does not create) a MachineDeployment of cluster with replicas
// worker Machines of version KubernetesVersion, bootstrapped from the IgnitionConfigTemplate and
// built from the GenericInfrastructureMachineTemplate of the same name. It carries the defaults
// CAPI's MachineDeployment webhook would add (cluster-name label, selector and template labels
// on cluster-name and deployment-name, RollingUpdate 1/0): the harness runs no CAPI webhooks.
func NewMachineDeployment(cluster *clusterv1.Cluster, name string, replicas int32) *clusterv1.MachineDeployment {
	selector := map[string]string{
		clusterv1.ClusterNameLabel:           cluster.Name,
		clusterv1.MachineDeploymentNameLabel: name,
	}
	templateLabels := map[string]string{}
	for k, v := range selector {
		templateLabels[k] = v
	}
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster.Namespace,
			Name:      name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster.Name,
			Replicas:    &replicas,
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge:       ptrIntOrString(1),
					MaxUnavailable: ptrIntOrString(0),
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: templateLabels},
				Spec: clusterv1.MachineSpec{
					ClusterName:       cluster.Name,
					Version:           KubernetesVersion,
					Bootstrap:         clusterv1.Bootstrap{ConfigRef: IgnitionConfigTemplateRef(name)},
					InfrastructureRef: GenericInfraMachineTemplateRef(name),
				},
			},
		},
	}
}

func ptrIntOrString(i int32) *intstr.IntOrString { v := intstr.FromInt32(i); return &v }

// setNestedStatus sets status fields of the object referenced by ref (resolved like CAPI does,
// through the CRD's contract label). NotFound is returned as is.
func (e *Environment) setNestedStatus(ctx context.Context, namespace string, ref clusterv1.ContractVersionedObjectReference, value any, path ...string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, ref, namespace)
		if err != nil {
			return err
		}
		before := obj.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, value, append([]string{"status"}, path...)...); err != nil {
			return err
		}
		return e.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

// patchCluster re-reads cluster, applies mutate and patches it with CAPI's patch helper (which
// merges conditions with concurrent writers), then copies the result into cluster.
func (e *Environment) patchCluster(ctx context.Context, cluster *clusterv1.Cluster, mutate func(*clusterv1.Cluster), opts ...patch.Option) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &clusterv1.Cluster{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cluster), latest); err != nil {
			return err
		}
		h, err := patch.NewHelper(latest, e.Client)
		if err != nil {
			return err
		}
		mutate(latest)
		if err := h.Patch(ctx, latest, opts...); err != nil {
			return err
		}
		latest.DeepCopyInto(cluster)
		return nil
	})
}

// MarkInfrastructureProvisioned sets the Cluster's status.initialization.infrastructureProvisioned
// (which lets the ClusterCache connect) and, when it exists, the infrastructure cluster's
// status.initialization.provisioned (what CAPI's Cluster controller, if running, derives the
// Cluster field from; CAPI never flips the Cluster field back to false).
func (e *Environment) MarkInfrastructureProvisioned(ctx context.Context, cluster *clusterv1.Cluster) error {
	if cluster.Spec.InfrastructureRef.IsDefined() {
		err := e.setNestedStatus(ctx, cluster.Namespace, cluster.Spec.InfrastructureRef, true, "initialization", "provisioned")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("testenv: marking %s %s provisioned: %w", cluster.Spec.InfrastructureRef.Kind, cluster.Spec.InfrastructureRef.Name, err)
		}
	}
	return e.patchCluster(ctx, cluster, func(c *clusterv1.Cluster) {
		c.Status.Initialization.InfrastructureProvisioned = ptrTrue()
	})
}

// MarkControlPlaneInitialized sets the Cluster's status.initialization.controlPlaneInitialized,
// the v1beta2 condition ControlPlaneInitialized=True (reason Initialized; CAPI's Machine
// controller watches Nodes of the workload cluster only once it is True) and the deprecated
// v1beta1 condition; with a controlPlaneRef, also the control plane object's
// status.initialization.controlPlaneInitialized.
//
// CAPI's Cluster controller, if running, never turns a True ControlPlaneInitialized condition
// back. Left alone it computes it: without controlPlaneRef, True once a control-plane Machine has
// status.nodeRef (MarkMachineNodeJoined on one), without ever setting
// status.initialization.controlPlaneInitialized; with controlPlaneRef, from the control plane
// object's status.initialization.controlPlaneInitialized (it then sets both).
func (e *Environment) MarkControlPlaneInitialized(ctx context.Context, cluster *clusterv1.Cluster) error {
	if cluster.Spec.ControlPlaneRef.IsDefined() {
		err := e.setNestedStatus(ctx, cluster.Namespace, cluster.Spec.ControlPlaneRef, true, "initialization", "controlPlaneInitialized")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("testenv: marking %s %s initialized: %w", cluster.Spec.ControlPlaneRef.Kind, cluster.Spec.ControlPlaneRef.Name, err)
		}
	}
	return e.patchCluster(ctx, cluster, func(c *clusterv1.Cluster) {
		c.Status.Initialization.ControlPlaneInitialized = ptrTrue()
		conditions.Set(c, metav1.Condition{
			Type:   clusterv1.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue,
			Reason: clusterv1.ClusterControlPlaneInitializedReason,
		})
		v1beta1conditions.MarkTrue(c, clusterv1.ControlPlaneInitializedV1Beta1Condition)
	},
		// CAPI's Cluster controller may be writing the same conditions (False): ours win.
		patch.WithOwnedConditions{Conditions: []string{clusterv1.ClusterControlPlaneInitializedCondition}},
		patch.WithOwnedV1Beta1Conditions{Conditions: []clusterv1.ConditionType{clusterv1.ControlPlaneInitializedV1Beta1Condition}},
	)
}

// ImpersonatedConfig returns a copy of the admin Config whose requests the API server
// authorizes as user (impersonation; the admin may impersonate anyone). For a ServiceAccount pass
// "system:serviceaccount:<namespace>:<name>": the API server adds the account's groups itself.
// The ServiceAccount need not exist; what it may do is what RBAC bindings to it allow.
func (e *Environment) ImpersonatedConfig(user string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// Kubeconfig returns a kubeconfig for the envtest API server (admin client certificate), with
// cluster/context names derived from clusterName.
func (e *Environment) Kubeconfig(clusterName string) ([]byte, error) {
	user := e.Config.Username
	if user == "" {
		user = "admin"
	}
	ctxName := user + "@" + clusterName
	server := e.Config.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{clusterName: {
			Server:                   server,
			CertificateAuthorityData: e.Config.CAData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{user: {
			ClientCertificateData: e.Config.CertData,
			ClientKeyData:         e.Config.KeyData,
		}},
		Contexts:       map[string]*clientcmdapi.Context{ctxName: {Cluster: clusterName, AuthInfo: user}},
		CurrentContext: ctxName,
	})
}

func clusterOwnerRefs(cluster *clusterv1.Cluster) []metav1.OwnerReference {
	if cluster.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(),
		Kind:       "Cluster",
		Name:       cluster.Name,
		UID:        cluster.UID,
	}}
}

// CreateWorkloadKubeconfigSecret writes the "<cluster>-kubeconfig" Secret (key "value", type
// cluster.x-k8s.io/secret, cluster-name label) pointing at the envtest API server, so the envtest
// server doubles as the workload cluster. It overwrites an existing Secret (CAPI's Cluster
// controller, if running, generates one from the "<cluster>-ca" Secret that this server rejects).
func (e *Environment) CreateWorkloadKubeconfigSecret(ctx context.Context, cluster *clusterv1.Cluster) (*corev1.Secret, error) {
	data, err := e.Kubeconfig(cluster.Name)
	if err != nil {
		return nil, fmt.Errorf("testenv: writing kubeconfig: %w", err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cluster.Namespace,
			Name:            secret.Name(cluster.Name, secret.Kubeconfig),
			Labels:          map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
			OwnerReferences: clusterOwnerRefs(cluster),
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{secret.KubeconfigDataName: data},
	}
	err = e.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			existing := &corev1.Secret{}
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(s), existing); err != nil {
				return err
			}
			existing.Labels = s.Labels
			existing.Type = s.Type
			existing.Data = s.Data
			if err := e.Client.Update(ctx, existing); err != nil {
				return err
			}
			s = existing
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("testenv: writing Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return s, nil
}

// CreateClusterCA looks up or generates the "<cluster>-ca" Secret (tls.crt/tls.key, with
// sigs.k8s.io/cluster-api/util/secret, as CABPK does) and returns the CA certificate PEM.
func (e *Environment) CreateClusterCA(ctx context.Context, cluster *clusterv1.Cluster) ([]byte, error) {
	certs := secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{})
	ca := certs.GetByPurpose(secret.ClusterCA)
	if err := (secret.Certificates{ca}).LookupOrGenerate(ctx, e.Client, client.ObjectKeyFromObject(cluster), clusterOwnerRef(cluster)); err != nil {
		return nil, fmt.Errorf("testenv: creating cluster CA: %w", err)
	}
	return ca.KeyPair.Cert, nil
}

// CreateClusterCertificates looks up or generates all certificates of an initial control plane
// (CA, etcd CA, front-proxy CA, service-account key) as "<cluster>-<purpose>" Secrets.
func (e *Environment) CreateClusterCertificates(ctx context.Context, cluster *clusterv1.Cluster) (secret.Certificates, error) {
	certs := secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{})
	if err := certs.LookupOrGenerate(ctx, e.Client, client.ObjectKeyFromObject(cluster), clusterOwnerRef(cluster)); err != nil {
		return nil, fmt.Errorf("testenv: creating cluster certificates: %w", err)
	}
	return certs, nil
}

func clusterOwnerRef(cluster *clusterv1.Cluster) metav1.OwnerReference {
	if refs := clusterOwnerRefs(cluster); len(refs) > 0 {
		return refs[0]
	}
	return metav1.OwnerReference{}
}

// WaitForClusterCacheConnected polls (100ms) until the ClusterCache has a client for cluster, for
// at most timeout. Needs the kubeconfig Secret and infrastructureProvisioned.
func (e *Environment) WaitForClusterCacheConnected(ctx context.Context, cluster *clusterv1.Cluster, timeout time.Duration) error {
	if e.ClusterCache == nil {
		return errors.New("testenv: no ClusterCache (enable Options.ClusterCache or a CAPI controller)")
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = e.ClusterCache.GetClient(ctx, client.ObjectKeyFromObject(cluster))
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("testenv: ClusterCache not connected to %s/%s (kubeconfig Secret created? infrastructureProvisioned?): %w (last: %v)",
			cluster.Namespace, cluster.Name, err, last)
	}
	return nil
}

// NodeName is the name of the Node MarkMachineNodeJoined creates for machine (Nodes are
// cluster-scoped and every Cluster shares the envtest server, so the namespace is part of it).
func NodeName(machine *clusterv1.Machine) string {
	return machine.Namespace + "-" + machine.Name
}

// ProviderID is the providerID MarkMachineNodeJoined uses when neither the Machine nor its
// infrastructure machine has one.
func ProviderID(machine *clusterv1.Machine) string {
	return "test:///" + machine.Namespace + "/" + machine.Name
}

// MarkMachineNodeJoined plays the infrastructure provider and the kubelet for machine: it creates
// a Ready Node with the Machine's providerID in the (envtest) workload cluster, then sets the
// infrastructure machine's spec.providerID and status.initialization.provisioned=true. CAPI's
// Machine controller then copies the providerID to the Machine and sets status.nodeRef (assert
// it with Eventually).
//
// Needs the ClusterCache connected to the Machine's Cluster (kubeconfig Secret +
// MarkInfrastructureProvisioned). When it is connected, this waits until the ClusterCache's
// Node cache has the Node, so the Machine reconcile triggered by the infrastructure machine
// finds it even where CAPI does not watch Nodes yet (it watches them only once the Cluster's
// ControlPlaneInitialized condition is True).
func (e *Environment) MarkMachineNodeJoined(ctx context.Context, machine *clusterv1.Machine) (*corev1.Node, error) {
	m, providerID, err := e.machineProviderID(ctx, machine)
	if err != nil {
		return nil, err
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName(m)},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("testenv: creating Node %s: %w", node.Name, err)
		}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return nil, err
		}
		if node.Spec.ProviderID != providerID {
			return nil, fmt.Errorf("testenv: Node %s exists with providerID %q, want %q", node.Name, node.Spec.ProviderID, providerID)
		}
	}
	before := node.DeepCopy()
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	node.Status.NodeInfo.KubeletVersion = m.Spec.Version
	if err := e.Client.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("testenv: patching Node %s status: %w", node.Name, err)
	}

	if e.ClusterCache != nil {
		key := client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}
		if r, err := e.ClusterCache.GetReader(ctx, key); err == nil {
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return r.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{}) == nil, nil
			})
			if err != nil {
				return nil, fmt.Errorf("testenv: Node %s did not show up in the ClusterCache: %w", node.Name, err)
			}
		}
	}

	if err := e.markInfraMachineProvisioned(ctx, m, providerID); err != nil {
		return nil, err
	}
	return node, nil
}

// MarkMachineInfrastructureProvisioned plays the infrastructure provider alone: it sets the
// infrastructure machine's spec.providerID (its own, the Machine's, or ProviderID) and
// status.initialization.provisioned=true, and returns the providerID. CAPI's Machine controller
// then sets the Machine's spec.providerID and status.initialization.infrastructureProvisioned
// (assert it with Eventually); no Node is created, so the Machine gets no nodeRef.
func (e *Environment) MarkMachineInfrastructureProvisioned(ctx context.Context, machine *clusterv1.Machine) (string, error) {
	m, providerID, err := e.machineProviderID(ctx, machine)
	if err != nil {
		return "", err
	}
	return providerID, e.markInfraMachineProvisioned(ctx, m, providerID)
}

// machineProviderID reads machine and the providerID its infrastructure machine has or gets:
// the infrastructure machine's own, else the Machine's, else ProviderID.
func (e *Environment) machineProviderID(ctx context.Context, machine *clusterv1.Machine) (*clusterv1.Machine, string, error) {
	m := &clusterv1.Machine{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(machine), m); err != nil {
		return nil, "", fmt.Errorf("testenv: getting Machine: %w", err)
	}
	infra, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, m.Spec.InfrastructureRef, m.Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("testenv: getting infrastructure machine of Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	providerID, _, _ := unstructured.NestedString(infra.Object, "spec", "providerID")
	if providerID == "" {
		providerID = m.Spec.ProviderID
	}
	if providerID == "" {
		providerID = ProviderID(m)
	}
	return m, providerID, nil
}

// markInfraMachineProvisioned sets spec.providerID and status.initialization.provisioned of the
// infrastructure machine of m.
func (e *Environment) markInfraMachineProvisioned(ctx context.Context, m *clusterv1.Machine, providerID string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, m.Spec.InfrastructureRef, m.Namespace)
		if err != nil {
			return err
		}
		before := obj.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, providerID, "spec", "providerID"); err != nil {
			return err
		}
		return e.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("testenv: setting spec.providerID of %s %s: %w", m.Spec.InfrastructureRef.Kind, m.Spec.InfrastructureRef.Name, err)
	}
	if err := e.setNestedStatus(ctx, m.Namespace, m.Spec.InfrastructureRef, true, "initialization", "provisioned"); err != nil {
		return fmt.Errorf("testenv: marking %s %s provisioned: %w", m.Spec.InfrastructureRef.Kind, m.Spec.InfrastructureRef.Name, err)
	}
	return nil
}

func ptrTrue() *bool { t := true; return &t }
