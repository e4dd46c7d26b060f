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

// Package aws proves, with Cluster API Provider AWS v2.13.0's own code (imported, not copied),
// what an EC2 instance receives when cabpi's data Secret (value = Ignition JSON, format =
// "ignition") is handed to CAPA. The data is cabpi's real output (`cabpi render`), the Secret
// and CAPA's objects live in a real kube-apiserver (envtest, CAPA's own CRDs), and only the AWS
// APIs that cannot be reached from a test are stood in for: an EC2 recorder and an in-memory S3
// behind CAPA's SDK-level client interfaces (common.EC2API, s3.S3API), so CAPA's services
// (ec2.Service, s3.Service) run unchanged above them, base64 and object keys included.
//
// What is called:
//   - scope.MachineScope.GetRawBootstrapDataWithFormat, UseIgnition, CompressUserData and
//     GetBootstrapData against the Secret in the API server, with format ignition and, to show
//     that the format key matters to CAPA, cloud-config;
//   - (*ec2.Service).CreateInstance, the AWSMachine's last step: the user data it base64-encodes
//     into RunInstances (storageType UnencryptedUserData);
//   - (*s3.Service).Create, the AWSMachine's S3 object (storageType ClusterObjectStore);
//   - (*ec2.Service).ReconcileLaunchTemplate, the whole AWSMachinePool path for both storage
//     types: the launch template's user data, CAPA's S3 stub and the S3 object it points at;
//   - CAPA's webhooks' Default and ValidateCreate on every object, as the API server would with
//     CAPA's webhooks installed (they default spec.ignition.version).
//
// What cannot be called, and why:
//   - (*controllers.AWSMachineReconciler).resolveUserData and generateIgnitionWithRemoteStorage
//     (controllers/awsmachine_controller.go) choose between the Secret's data and the S3 stub for
//     an AWSMachine and build that stub: both unexported. Reaching them through the exported
//     Reconcile would need the reconciler's service factories (ec2ServiceFactory,
//     objectStoreServiceFactory: unexported fields), else it builds real AWS clients that need a
//     live AWS API (and reconcileNormal also wants ELB, security groups, secrets backends...).
//     Covered instead: its inputs (GetRawBootstrapDataWithFormat, UseIgnition), its S3 half
//     ((*s3.Service).Create) and its output step ((*ec2.Service).CreateInstance, which gets
//     resolveUserData's result unchanged for UnencryptedUserData, per the source); the stub
//     itself is checked on the MachinePool path, whose ReconcileLaunchTemplate builds the same
//     stub (same Ignition types, same version handling; the AWSMachine's adds
//     spec.ignition.proxy and tls for 3.x) and is exported.
//   - getIgnitionVersion (the AWSMachine's version default) is unexported; the AWSMachine
//     webhook's Default, which sets the same default at admission, is called instead.
package aws

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	autoscalingtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2sdk "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	ign2 "github.com/coreos/ignition/config/v2_3"
	ign3 "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2"
	expinfrav1 "sigs.k8s.io/cluster-api-provider-aws/v2/exp/api/v1beta2"
	expwebhooks "sigs.k8s.io/cluster-api-provider-aws/v2/exp/webhooks"
	"sigs.k8s.io/cluster-api-provider-aws/v2/feature"
	"sigs.k8s.io/cluster-api-provider-aws/v2/pkg/cloud/awserrors"
	"sigs.k8s.io/cluster-api-provider-aws/v2/pkg/cloud/scope"
	"sigs.k8s.io/cluster-api-provider-aws/v2/pkg/cloud/services/common"
	ec2svc "sigs.k8s.io/cluster-api-provider-aws/v2/pkg/cloud/services/ec2"
	s3svc "sigs.k8s.io/cluster-api-provider-aws/v2/pkg/cloud/services/s3"
	"sigs.k8s.io/cluster-api-provider-aws/v2/webhooks"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/providers/providertest"
)

const (
	capaModule = "sigs.k8s.io/cluster-api-provider-aws/v2"
	capiModule = "sigs.k8s.io/cluster-api"
	// ec2UserDataLimit is EC2's limit on user data, counted before base64 (16 KB).
	ec2UserDataLimit = 16384
	bucketName       = "cabpi-ignition"
	region           = "us-east-1"
	zone             = "us-east-1a"
)

// gzipMagic starts every gzip stream: CAPA must not add a layer Ignition would not undo.
var gzipMagic = []byte{0x1f, 0x8b}

func capaClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme, expinfrav1.AddToScheme, clusterv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	// CAPA's CRDs for the objects its scopes patch, and Cluster API's MachinePool, whose patch
	// helper the MachinePool scope builds (it needs the kind in the API server's discovery).
	return providertest.KubeClient(t, scheme,
		capaModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_awsclusters.yaml",
		capaModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_awsclustercontrolleridentities.yaml",
		capaModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachines.yaml",
		capaModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachinepools.yaml",
		capiModule+":config/crd/bases/cluster.x-k8s.io_machinepools.yaml",
	)
}

var enableIgnition sync.Once

// isolateAWS keeps the AWS SDK's default configuration off this machine's files and off the
// instance metadata service: nothing may leave loopback. The static keys are not credentials
// of anything; they only let the S3 presigner sign (locally).
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTESTONLY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-only-not-a-credential")
	t.Setenv("AWS_REGION", region)
	// CAPA accepts spec.ignition and spec.s3Bucket only with this gate on, as its manager runs
	// with EXP_BOOTSTRAP_FORMAT_IGNITION=true (--feature-gates=BootstrapFormatIgnition=true).
	enableIgnition.Do(func() {
		require.NoError(t, feature.MutableGates.Set(string(feature.BootstrapFormatIgnition)+"=true"))
	})
}

// defaulterValidator is what CAPA's webhooks implement.
type defaulterValidator interface {
	Default(ctx context.Context, obj runtime.Object) error
	ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error)
}

// admitAndCreate runs CAPA's own webhook on obj (defaulting, then validation), as the API
// server would with CAPA installed, and creates it.
func admitAndCreate(t *testing.T, c client.Client, hook defaulterValidator, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, hook.Default(ctx, obj), "CAPA's webhook defaulting %T", obj)
	_, err := hook.ValidateCreate(ctx, obj)
	require.NoError(t, err, "CAPA's webhook rejects %T", obj)
	require.NoError(t, c.Create(ctx, obj), "creating %T", obj)
}

// awsCluster is one Cluster with its AWSCluster, as CAPA sees it once the network exists.
type awsCluster struct {
	c       client.Client
	ns      string
	cluster *clusterv1.Cluster
	scope   *scope.ClusterScope
}

func newAWSCluster(t *testing.T, bucket *infrav1.S3Bucket) *awsCluster {
	t.Helper()
	isolateAWS(t)
	c := capaClient(t)
	ns := providertest.NewNamespace(t, c)
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "AWSCluster", Name: "cabpi",
		}},
	}
	awsc := &infrav1.AWSCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns},
		Spec: infrav1.AWSClusterSpec{
			Region:      region,
			S3Bucket:    bucket,
			NetworkSpec: infrav1.NetworkSpec{Subnets: infrav1.Subnets{{ID: "subnet-private", AvailabilityZone: zone}}},
		},
	}
	admitAndCreate(t, c, &webhooks.AWSCluster{}, awsc)
	// The webhook points the AWSCluster at the controller's own identity; CAPA's manager creates
	// that object at start (AutoControllerIdentityCreator). Its credentials are then the
	// manager's environment: the placeholders isolateAWS sets.
	require.Equal(t, infrav1.AWSClusterControllerIdentityName, awsc.Spec.IdentityRef.Name)
	controllerIdentity(t, c)
	// What the AWSCluster controller records once it has built the network: CreateInstance and
	// the launch template read the security groups and the API server's load balancer from it.
	awsc.Status.Network.SecurityGroups = map[infrav1.SecurityGroupRole]infrav1.SecurityGroup{
		infrav1.SecurityGroupNode:         {ID: "sg-node"},
		infrav1.SecurityGroupLB:           {ID: "sg-lb"},
		infrav1.SecurityGroupControlPlane: {ID: "sg-control-plane"},
	}
	awsc.Status.Network.APIServerELB.DNSName = "api.example.com"
	cs, err := scope.NewClusterScope(scope.ClusterScopeParams{
		Client: c, Cluster: cluster, AWSCluster: awsc, ControllerName: "awscluster",
	})
	require.NoError(t, err, "CAPA's ClusterScope")
	return &awsCluster{c: c, ns: ns, cluster: cluster, scope: cs}
}

// controllerIdentity creates CAPA's AWSClusterControllerIdentity "default" once, for every
// namespace, as CAPA's manager does.
func controllerIdentity(t *testing.T, c client.Client) {
	t.Helper()
	id := &infrav1.AWSClusterControllerIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: infrav1.AWSClusterControllerIdentityName},
		Spec: infrav1.AWSClusterControllerIdentitySpec{AWSClusterIdentitySpec: infrav1.AWSClusterIdentitySpec{
			AllowedNamespaces: &infrav1.AllowedNamespaces{},
		}},
	}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(id), &infrav1.AWSClusterControllerIdentity{})
	if apierrors.IsNotFound(err) {
		admitAndCreate(t, c, &webhooks.AWSClusterControllerIdentity{}, id)
		return
	}
	require.NoError(t, err, "reading the controller identity")
}

// storeSecret writes cabpi's data Secret for a Machine into the API server.
func (a *awsCluster) storeSecret(t *testing.T, name string, value []byte) {
	t.Helper()
	a.storeSecretWithFormat(t, name, value, "ignition")
}

// storeSecretWithFormat writes a data Secret whose format key says format.
func (a *awsCluster) storeSecretWithFormat(t *testing.T, name string, value []byte, format string) {
	t.Helper()
	secret := providertest.DataSecret(a.ns, name, a.cluster.Name, value, format)
	require.NoError(t, a.c.Create(context.Background(), secret), "creating the data Secret")
}

// machineScope is CAPA's MachineScope for a Machine whose data Secret is secretName.
func (a *awsCluster) machineScope(t *testing.T, name, secretName string, controlPlane bool, ignition *infrav1.Ignition) *scope.MachineScope {
	t.Helper()
	labels := map[string]string{clusterv1.ClusterNameLabel: a.cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: a.cluster.Name,
			Version:     providertest.KubernetesVersion,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(secretName)},
		},
	}
	awsm := &infrav1.AWSMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: infrav1.AWSMachineSpec{
			InstanceType: "m5.large",
			AMI:          infrav1.AMIReference{ID: ptr.To("ami-flatcar")},
			Ignition:     ignition,
			// Asks for gzip explicitly: CAPA gzips cloud-init when this is false, and must still
			// leave Ignition alone (CompressUserData is false for format "ignition").
			UncompressedUserData: ptr.To(false),
		},
	}
	admitAndCreate(t, a.c, &webhooks.AWSMachine{}, awsm)
	ms, err := scope.NewMachineScope(scope.MachineScopeParams{
		Client: a.c, Cluster: a.cluster, Machine: machine, InfraCluster: a.scope, AWSMachine: awsm,
	})
	require.NoError(t, err, "CAPA's MachineScope")
	return ms
}

// ec2API stands in for the EC2 API behind CAPA's ec2.Service: it records what CAPA sends and
// answers the few calls the tested paths make. Any other call hits the nil embedded interface
// and panics, naming the call a path has started to need.
type ec2API struct {
	common.EC2API
	mu              sync.Mutex
	launchTemplates []*ec2sdk.CreateLaunchTemplateInput
	runInstances    []*ec2sdk.RunInstancesInput
}

// DescribeLaunchTemplateVersions: no launch template yet, as EC2 says it.
func (e *ec2API) DescribeLaunchTemplateVersions(_ context.Context, in *ec2sdk.DescribeLaunchTemplateVersionsInput, _ ...func(*ec2sdk.Options)) (*ec2sdk.DescribeLaunchTemplateVersionsOutput, error) {
	return nil, &smithy.GenericAPIError{Code: awserrors.LaunchTemplateNameNotFound, Message: fmt.Sprintf("launch template %s does not exist", awssdk.ToString(in.LaunchTemplateName))}
}

func (e *ec2API) CreateLaunchTemplate(_ context.Context, in *ec2sdk.CreateLaunchTemplateInput, _ ...func(*ec2sdk.Options)) (*ec2sdk.CreateLaunchTemplateOutput, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launchTemplates = append(e.launchTemplates, in)
	id := fmt.Sprintf("lt-%04d", len(e.launchTemplates))
	return &ec2sdk.CreateLaunchTemplateOutput{LaunchTemplate: &ec2types.LaunchTemplate{LaunchTemplateId: &id, LaunchTemplateName: in.LaunchTemplateName}}, nil
}

func (e *ec2API) DescribeInstanceTypes(_ context.Context, in *ec2sdk.DescribeInstanceTypesInput, _ ...func(*ec2sdk.Options)) (*ec2sdk.DescribeInstanceTypesOutput, error) {
	var out ec2sdk.DescribeInstanceTypesOutput
	for _, it := range in.InstanceTypes {
		out.InstanceTypes = append(out.InstanceTypes, ec2types.InstanceTypeInfo{
			InstanceType:  it,
			ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureTypeX8664}},
		})
	}
	return &out, nil
}

func (e *ec2API) RunInstances(_ context.Context, in *ec2sdk.RunInstancesInput, _ ...func(*ec2sdk.Options)) (*ec2sdk.RunInstancesOutput, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runInstances = append(e.runInstances, in)
	return &ec2sdk.RunInstancesOutput{Instances: []ec2types.Instance{{
		InstanceId:   ptr.To(fmt.Sprintf("i-%04d", len(e.runInstances))),
		InstanceType: in.InstanceType,
		ImageId:      in.ImageId,
		SubnetId:     in.NetworkInterfaces[0].SubnetId,
		State:        &ec2types.InstanceState{Name: ec2types.InstanceStateNamePending},
		Placement:    &ec2types.Placement{AvailabilityZone: ptr.To(zone)},
	}}}, nil
}

func (e *ec2API) DescribeNetworkInterfaces(context.Context, *ec2sdk.DescribeNetworkInterfacesInput, ...func(*ec2sdk.Options)) (*ec2sdk.DescribeNetworkInterfacesOutput, error) {
	return &ec2sdk.DescribeNetworkInterfacesOutput{}, nil
}

// memS3 is an in-memory S3 behind CAPA's s3.Service: objects by bucket and key, with the
// server-side encryption CAPA asked for.
type memS3 struct {
	s3svc.S3API
	mu      sync.Mutex
	objects map[string][]byte
	sse     map[string]s3types.ServerSideEncryption
}

func newMemS3() *memS3 {
	return &memS3{objects: map[string][]byte{}, sse: map[string]s3types.ServerSideEncryption{}}
}

func (m *memS3) PutObject(_ context.Context, in *s3sdk.PutObjectInput, _ ...func(*s3sdk.Options)) (*s3sdk.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the object body: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := awssdk.ToString(in.Bucket) + "/" + awssdk.ToString(in.Key)
	m.objects[k] = b
	m.sse[k] = in.ServerSideEncryption
	return &s3sdk.PutObjectOutput{}, nil
}

// object is what the bucket holds at key, and whether it is there.
func (m *memS3) object(bucket, key string) ([]byte, s3types.ServerSideEncryption, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[bucket+"/"+key]
	return b, m.sse[bucket+"/"+key], ok
}

// services are CAPA's real EC2 and S3 services over the stand-ins.
func (a *awsCluster) services() (*ec2svc.Service, *ec2API, *s3svc.Service, *memS3) {
	ec2Fake, s3Fake := &ec2API{}, newMemS3()
	ec2s := ec2svc.NewService(a.scope).WithInstanceTypeArchitectureCache(nil)
	ec2s.EC2Client = ec2Fake
	s3s := s3svc.NewService(a.scope)
	// The presigner keeps the real client: presigning is local signing, no request is sent.
	s3s.S3Client = s3Fake
	return ec2s, ec2Fake, s3s, s3Fake
}

// TestAWSMachineUnencryptedUserData: with spec.ignition.storageType UnencryptedUserData, the
// instance's user data is cabpi's data itself: CAPA reads it from the Secret with its format,
// does not gzip it (even with spec.uncompressedUserData false), and base64-encodes it into
// RunInstances; EC2 then holds the raw bytes, which must fit its 16 KB. CAPA checks no size: data
// one byte over reaches RunInstances whole, and cabpi, rendering against the same limit, has
// warned about it before.
func TestAWSMachineUnencryptedUserData(t *testing.T) {
	for _, ex := range append(providertest.Examples("node-name-aws.yaml"), providertest.OverLimit(ec2UserDataLimit)) {
		t.Run(ex.Name(), func(t *testing.T) {
			out := providertest.Render(t, ex, "aws")
			a := newAWSCluster(t, nil)
			a.storeSecret(t, "data", out.Data)
			ms := a.machineScope(t, "m", "data", ex.ControlPlane, &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionUnencryptedUserData})

			data, format, err := ms.GetRawBootstrapDataWithFormat()
			require.NoError(t, err)
			providertest.RequireSameBytes(t, out.Data, data, "GetRawBootstrapDataWithFormat's data")
			require.Equal(t, "ignition", format, "the format CAPA reads from the Secret")
			require.True(t, ms.UseIgnition(format), "UseIgnition")
			require.False(t, ms.CompressUserData(format), "CompressUserData: CAPA would gzip the Ignition")
			b64, err := ms.GetBootstrapData()
			require.NoError(t, err)
			providertest.RequireBase64Of(t, out.Data, b64, "GetBootstrapData (the value, base64-encoded)")

			// resolveUserData returns GetRawBootstrapDataWithFormat's data unchanged for
			// UnencryptedUserData (it is unexported: see the package comment); CreateInstance
			// decides on gzip and encodes.
			ec2s, ec2Fake, _, _ := a.services()
			instance, err := ec2s.CreateInstance(context.Background(), ms, data, format)
			require.NoError(t, err, "CAPA's CreateInstance")
			require.NotEmpty(t, instance.ID)
			require.Len(t, ec2Fake.runInstances, 1, "RunInstances calls")
			userData, err := base64.StdEncoding.DecodeString(awssdk.ToString(ec2Fake.runInstances[0].UserData))
			require.NoError(t, err, "RunInstances' user data is base64")
			require.False(t, bytes.HasPrefix(userData, gzipMagic), "CAPA gzipped the Ignition")
			providertest.RequireSameBytes(t, out.Data, userData, "the instance's user data")
			providertest.RequireLimitReported(t, out, len(userData), ec2UserDataLimit)
		})
	}
}

// TestAWSSecretFormat: unlike CAPZ and CAPG, CAPA reads the Secret's format key, and it alone
// keeps CAPA from gzipping cabpi's data when the AWSMachine has no spec.ignition (CAPA's
// default, spec.uncompressedUserData unset or false, gzips cloud-config): the same bytes under
// format cloud-config reach RunInstances gzipped. The rows exercise CreateInstance's gzip gate
// only: for format ignition without spec.ignition, the (unexported) resolveUserData would first
// move the data to S3, spec.ignition.storageType defaulting to ClusterObjectStore, and fail when
// the AWSCluster has no spec.s3Bucket.
func TestAWSSecretFormat(t *testing.T) {
	out := providertest.RenderCabpi(t, "node-name-aws.yaml", "worker", "aws")
	for _, tc := range []struct {
		format string
		gzip   bool
	}{
		{format: "ignition", gzip: false},
		{format: "cloud-config", gzip: true},
	} {
		t.Run(tc.format, func(t *testing.T) {
			a := newAWSCluster(t, nil)
			a.storeSecretWithFormat(t, "data", out.Data, tc.format)
			ms := a.machineScope(t, "m", "data", false, nil)
			data, format, err := ms.GetRawBootstrapDataWithFormat()
			require.NoError(t, err)
			require.Equal(t, tc.format, format)
			require.Equal(t, !tc.gzip, ms.UseIgnition(format), "UseIgnition")
			require.Equal(t, tc.gzip, ms.CompressUserData(format), "CompressUserData")

			ec2s, ec2Fake, _, _ := a.services()
			_, err = ec2s.CreateInstance(context.Background(), ms, data, format)
			require.NoError(t, err, "CAPA's CreateInstance")
			require.Len(t, ec2Fake.runInstances, 1, "RunInstances calls")
			userData, err := base64.StdEncoding.DecodeString(awssdk.ToString(ec2Fake.runInstances[0].UserData))
			require.NoError(t, err, "RunInstances' user data is base64")
			if !tc.gzip {
				providertest.RequireSameBytes(t, out.Data, userData, "the instance's user data")
				return
			}
			zr, err := gzip.NewReader(bytes.NewReader(userData))
			require.NoError(t, err, "the instance's user data is not gzip")
			unzipped, err := io.ReadAll(zr)
			require.NoError(t, err)
			providertest.RequireSameBytes(t, out.Data, unzipped, "the instance's user data, gunzipped")
		})
	}
}

// TestAWSMachineClusterObjectStore: with spec.ignition.storageType ClusterObjectStore (CAPA's
// default for an AWSMachine with spec.ignition), CAPA's s3.Service puts cabpi's data unchanged
// into the cluster's bucket under <role>/<machine name> and hands back an s3:// URL, which the
// (unexported) controller puts into the stub; the AWSMachine webhook defaults the stub's
// Ignition version to infrav1.DefaultIgnitionVersion.
func TestAWSMachineClusterObjectStore(t *testing.T) {
	for _, ex := range providertest.Examples("node-name-aws.yaml") {
		t.Run(ex.File, func(t *testing.T) {
			out := providertest.RenderCabpi(t, ex.File, ex.Role, "aws")
			a := newAWSCluster(t, &infrav1.S3Bucket{
				Name: bucketName, ControlPlaneIAMInstanceProfile: "control-plane.cluster-api-provider-aws.sigs.k8s.io",
				NodesIAMInstanceProfiles: []string{"nodes.cluster-api-provider-aws.sigs.k8s.io"},
			})
			a.storeSecret(t, "data", out.Data)
			ms := a.machineScope(t, "m", "data", ex.ControlPlane, &infrav1.Ignition{})
			require.Equal(t, infrav1.IgnitionStorageTypeOptionClusterObjectStore, ms.AWSMachine.Spec.Ignition.StorageType, "the webhook's default storage type")
			require.Equal(t, infrav1.DefaultIgnitionVersion, ms.AWSMachine.Spec.Ignition.Version, "the webhook's default Ignition version")

			data, format, err := ms.GetRawBootstrapDataWithFormat()
			require.NoError(t, err)
			require.True(t, ms.UseIgnition(format), "UseIgnition")
			_, _, s3s, s3Fake := a.services()
			objectURL, err := s3s.Create(context.Background(), ms, data)
			require.NoError(t, err, "CAPA's s3.Service.Create")

			key := ms.Role() + "/" + ms.Name()
			require.Equal(t, "s3://"+bucketName+"/"+key, objectURL, "the object URL CAPA puts into the stub")
			object, sse, ok := s3Fake.object(bucketName, key)
			require.True(t, ok, "no object at %s/%s", bucketName, key)
			providertest.RequireSameBytes(t, out.Data, object, "the S3 object")
			require.Equal(t, s3types.ServerSideEncryptionAwsKms, sse, "the object's server-side encryption")
		})
	}
}

// ignitionStub is the part of CAPA's stub config the tests read, for both spec lines.
type ignitionStub struct {
	Ignition struct {
		Version string `json:"version"`
		Config  struct {
			Append []struct {
				Source string `json:"source"`
			} `json:"append"`
			Merge []struct {
				Source string `json:"source"`
			} `json:"merge"`
		} `json:"config"`
	} `json:"ignition"`
}

// TestAWSMachinePoolLaunchTemplate runs CAPA's ReconcileLaunchTemplate for an AWSMachinePool
// and reads the launch template it creates. UnencryptedUserData (the MachinePool default): the
// template's user data is cabpi's data, not gzipped. ClusterObjectStore: it is CAPA's stub,
// Ignition version spec.ignition.version (default infrav1.DefaultIgnitionVersion), pointing
// (2.x: config.append, 3.x: config.merge) at an S3 object that holds cabpi's data unchanged;
// the stub must be a config the instance's Ignition accepts. Data one byte over EC2's limit is
// the launch template's user data all the same (cabpi has warned) or, in S3, whole behind the
// stub: no user-data limit applies to it there (ADR 028).
func TestAWSMachinePoolLaunchTemplate(t *testing.T) {
	bucket := &infrav1.S3Bucket{
		Name: bucketName, ControlPlaneIAMInstanceProfile: "control-plane.cluster-api-provider-aws.sigs.k8s.io",
		NodesIAMInstanceProfiles: []string{"nodes.cluster-api-provider-aws.sigs.k8s.io"},
	}
	presigned := bucket.DeepCopy()
	presigned.PresignedURLDuration = &metav1.Duration{Duration: time.Hour}
	for _, tc := range []struct {
		name    string
		example string
		// overLimit renders a worker one byte over EC2's limit instead of example.
		overLimit bool
		bucket    *infrav1.S3Bucket
		ignition  *infrav1.Ignition
		// wantStubVersion is the stub's Ignition major.minor; "" means no stub (the data itself).
		wantStubVersion string
	}{
		{name: "no spec.ignition", example: "node-name-aws.yaml"},
		{name: "UnencryptedUserData", example: "fcos-worker.yaml", bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionUnencryptedUserData}},
		{name: "ClusterObjectStore, default version", example: "node-name-aws.yaml", bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionClusterObjectStore}, wantStubVersion: infrav1.DefaultIgnitionVersion},
		{name: "ClusterObjectStore, version 3.4", example: "fcos-worker.yaml", bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionClusterObjectStore, Version: "3.4"}, wantStubVersion: "3.4"},
		{name: "ClusterObjectStore, version 3.0", example: "flatcar-kubernetes-sysext.yaml", bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionClusterObjectStore, Version: "3.0"}, wantStubVersion: "3.0"},
		{name: "ClusterObjectStore, presigned URL", example: "node-name-aws.yaml", bucket: presigned,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionClusterObjectStore, Version: "3.4"}, wantStubVersion: "3.4"},
		{name: "UnencryptedUserData, over the limit", overLimit: true, bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionUnencryptedUserData}},
		{name: "ClusterObjectStore, over the user-data limit", overLimit: true, bucket: bucket,
			ignition: &infrav1.Ignition{StorageType: infrav1.IgnitionStorageTypeOptionClusterObjectStore, Version: "3.4"}, wantStubVersion: "3.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := providertest.Example{File: tc.example, Role: "worker"}
			if tc.overLimit {
				ex = providertest.OverLimit(ec2UserDataLimit)
			}
			out := providertest.Render(t, ex, "aws")
			a := newAWSCluster(t, tc.bucket)
			a.storeSecret(t, "pool-data", out.Data)
			mps := a.machinePoolScope(t, "pool", "pool-data", tc.ignition)
			if tc.wantStubVersion != "" {
				require.NotEmpty(t, mps.AWSMachinePool.Spec.Ignition.Version, "the webhook left spec.ignition.version empty")
			}

			ec2s, ec2Fake, s3s, s3Fake := a.services()
			refuse := func(what string) func() error {
				return func() error { return fmt.Errorf("%s: not expected when the launch template is new", what) }
			}
			res, err := ec2s.ReconcileLaunchTemplate(context.Background(), mps, mps, a.scope, ec2s, s3s,
				func() (bool, *autoscalingtypes.InstanceRefreshStatus, error) {
					return false, nil, refuse("canStartInstanceRefresh")()
				},
				refuse("cancelInstanceRefresh"), refuse("runPostLaunchTemplateUpdateOperation"))
			require.NoError(t, err, "CAPA's ReconcileLaunchTemplate")
			require.Nil(t, res)
			require.Len(t, ec2Fake.launchTemplates, 1, "CreateLaunchTemplate calls")
			lt := ec2Fake.launchTemplates[0]
			require.Equal(t, mps.LaunchTemplateName(), awssdk.ToString(lt.LaunchTemplateName))
			userData, err := base64.StdEncoding.DecodeString(awssdk.ToString(lt.LaunchTemplateData.UserData))
			require.NoError(t, err, "the launch template's user data is base64")
			require.False(t, bytes.HasPrefix(userData, gzipMagic), "CAPA gzipped the user data")

			// The launch template's ID went back to the AWSMachinePool in the API server.
			var stored expinfrav1.AWSMachinePool
			require.NoError(t, a.c.Get(context.Background(), client.ObjectKeyFromObject(mps.AWSMachinePool), &stored))
			require.Equal(t, "lt-0001", stored.Status.LaunchTemplateID)

			if tc.wantStubVersion == "" {
				providertest.RequireSameBytes(t, out.Data, userData, "the launch template's user data")
				providertest.RequireLimitReported(t, out, len(userData), ec2UserDataLimit)
				return
			}
			// The user data is CAPA's stub and the S3 object cabpi's data whole, whatever its
			// size; TestCabpiKnowsCAPADefaults checks that cabpi renders it against no limit.
			checkStub(t, userData, tc.wantStubVersion, tc.bucket, mps.LaunchTemplateName(), s3Fake, out.Data)
		})
	}
}

// checkStub checks CAPA's stub: its Ignition version, that Ignition accepts it, and that the
// config it points at is an S3 object holding cabpi's data. CAPA marshals the 2.x stub with
// Ignition 2.3's types and every 3.x stub with Ignition 3.4's, writing the requested version
// into it: Ignition's parsers then warn about keys the version does not know (2.3.0:
// "unrecognized key: tls"; 3.0.0: "unused key kernelArguments", "unused key proxy"), which an
// instance's Ignition logs and boots through. Only errors fail the test.
func checkStub(t *testing.T, userData []byte, wantVersion string, bucket *infrav1.S3Bucket, launchTemplateName string, s3Fake *memS3, want []byte) {
	t.Helper()
	var stub ignitionStub
	require.NoError(t, json.Unmarshal(userData, &stub), "the stub is not JSON")
	version := stub.Ignition.Version
	require.True(t, version == wantVersion || strings.HasPrefix(version, wantVersion+"."),
		"the stub's Ignition version %q is not spec.ignition.version %q", version, wantVersion)

	// The instance's Ignition must take the stub: each spec line with its own parser.
	var sources []string
	if strings.HasPrefix(version, "2.") {
		_, rpt, err := ign2.Parse(userData)
		require.NoError(t, err, "Ignition 2.3 rejects CAPA's stub: %s", rpt)
		require.Empty(t, stub.Ignition.Config.Merge)
		for _, a := range stub.Ignition.Config.Append {
			sources = append(sources, a.Source)
		}
	} else {
		_, rpt, err := ign3.Parse(userData)
		require.NoError(t, err, "Ignition 3 rejects CAPA's stub: %s", rpt)
		require.Empty(t, stub.Ignition.Config.Append)
		for _, m := range stub.Ignition.Config.Merge {
			sources = append(sources, m.Source)
		}
	}
	require.Len(t, sources, 1, "the stub's config references")

	// The object: machine-pool/<launch template>/<hash of the data>.
	src, err := url.Parse(sources[0])
	require.NoError(t, err, "the stub's source")
	var key string
	if bucket.PresignedURLDuration == nil {
		require.Equal(t, "s3", src.Scheme, "the stub's source %s", sources[0])
		require.Equal(t, bucket.Name, src.Host)
		key = strings.TrimPrefix(src.Path, "/")
	} else {
		// A presigned URL: https, the bucket in the host, signed for the duration.
		require.Equal(t, "https", src.Scheme, "the stub's source")
		require.True(t, strings.HasPrefix(src.Host, bucket.Name+"."), "the presigned URL's host %q does not name the bucket", src.Host)
		require.NotEmpty(t, src.Query().Get("X-Amz-Signature"), "the presigned URL is not signed")
		require.Equal(t, fmt.Sprint(int(bucket.PresignedURLDuration.Seconds())), src.Query().Get("X-Amz-Expires"))
		key = strings.TrimPrefix(src.Path, "/")
	}
	require.True(t, strings.HasPrefix(key, "machine-pool/"+launchTemplateName+"/"), "the object key %q", key)
	object, sse, ok := s3Fake.object(bucket.Name, key)
	require.True(t, ok, "the stub points at %s/%s, which CAPA did not put", bucket.Name, key)
	providertest.RequireSameBytes(t, want, object, "the S3 object the stub points at")
	require.Equal(t, s3types.ServerSideEncryptionAwsKms, sse, "the object's server-side encryption")
}

// machinePoolScope is CAPA's MachinePoolScope for a MachinePool whose data Secret is secretName.
func (a *awsCluster) machinePoolScope(t *testing.T, name, secretName string, ignition *infrav1.Ignition) *scope.MachinePoolScope {
	t.Helper()
	labels := map[string]string{clusterv1.ClusterNameLabel: a.cluster.Name}
	mp := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: a.cluster.Name,
			Replicas:    ptr.To[int32](1),
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: a.cluster.Name,
				Version:     providertest.KubernetesVersion,
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(secretName)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: expinfrav1.GroupVersion.Group, Kind: "AWSMachinePool", Name: name,
				},
			}},
		},
	}
	amp := &expinfrav1.AWSMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: expinfrav1.AWSMachinePoolSpec{
			MinSize: 0, MaxSize: 1,
			Ignition: ignition,
			AWSLaunchTemplate: expinfrav1.AWSLaunchTemplate{
				InstanceType: "m5.large",
				AMI:          infrav1.AMIReference{ID: ptr.To("ami-flatcar")},
			},
		},
	}
	admitAndCreate(t, a.c, &expwebhooks.AWSMachinePool{}, amp)
	mps, err := scope.NewMachinePoolScope(scope.MachinePoolScopeParams{
		Client: a.c, Cluster: a.cluster, MachinePool: mp, InfraCluster: a.scope, AWSMachinePool: amp,
	})
	require.NoError(t, err, "CAPA's MachinePoolScope")
	return mps
}

// cabpi's own account of CAPA's defaults (internal/configinput/delivery.go: an AWSMachine keeps
// Ignition data in S3 behind a stub of version 2.3, an AWSMachinePool in the user data) is
// checked here against CAPA's constants, through `cabpi render` of a generated-cluster file: a
// Fedora CoreOS config whose AWSMachineTemplate has no spec.ignition is refused, naming CAPA's
// default version, one on an AWSMachinePool without spec.ignition is rendered against the user
// data's 16 KiB, and one on an AWSMachinePool keeping the data in S3 against no limit, as
// TestAWSMachinePoolLaunchTemplate shows CAPA hands it on.
func TestCabpiKnowsCAPADefaults(t *testing.T) {
	require.Equal(t, infrav1.IgnitionStorageTypeOptionClusterObjectStore, infrav1.DefaultIgnitionStorageType,
		"cabpi assumes CAPA keeps an AWSMachine's Ignition data in S3 by default")
	require.Equal(t, infrav1.IgnitionStorageTypeOptionUnencryptedUserData, infrav1.DefaultMachinePoolIgnitionStorageType,
		"cabpi assumes CAPA keeps an AWSMachinePool's Ignition data in the user data by default")

	const config = `apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: IgnitionConfigTemplate
metadata: {name: workers}
spec: {template: {spec: {variant: fcos}}}
`
	cases := []struct {
		name, owner, machine string
		wantErr, wantReport  string
	}{
		{
			name: "AWSMachineTemplate without spec.ignition",
			owner: `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: workers}
spec:
  clusterName: demo
  template:
    spec:
      clusterName: demo
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: IgnitionConfigTemplate, name: workers}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: workers}
`,
			machine: "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSMachineTemplate\nmetadata: {name: workers}\nspec: {template: {spec: {instanceType: t3.large}}}\n",
			wantErr: fmt.Sprintf("stub of version %q (spec.ignition.version; CAPA's default is %s)", infrav1.DefaultIgnitionVersion, infrav1.DefaultIgnitionVersion),
		},
		{
			name: "AWSMachinePool without spec.ignition",
			owner: `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachinePool
metadata: {name: workers}
spec:
  clusterName: demo
  template:
    spec:
      clusterName: demo
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: IgnitionConfigTemplate, name: workers}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachinePool, name: workers}
`,
			machine:    "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSMachinePool\nmetadata: {name: workers}\nspec: {minSize: 1, maxSize: 2}\n",
			wantReport: fmt.Sprintf("platform aws (AWSMachinePool workers), limit %d", ec2UserDataLimit),
		},
		{
			name: "AWSMachinePool with spec.ignition storageType ClusterObjectStore",
			owner: `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachinePool
metadata: {name: workers}
spec:
  clusterName: demo
  template:
    spec:
      clusterName: demo
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: IgnitionConfigTemplate, name: workers}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachinePool, name: workers}
`,
			machine: fmt.Sprintf("apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSMachinePool\nmetadata: {name: workers}\n"+
				"spec: {minSize: 1, maxSize: 2, ignition: {storageType: %s, version: \"3.4\"}}\n", infrav1.IgnitionStorageTypeOptionClusterObjectStore),
			wantReport: "platform aws (AWSMachinePool workers: data in S3, the user data is CAPA's Ignition 3.4 stub), no limit",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cluster.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tc.owner+"---\n"+tc.machine+"---\n"+config), 0o644))
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(os.Getenv("CABPI_BIN"), "render", "-f", file, "--name", "workers", "--kubernetes-version", providertest.KubernetesVersion)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tc.wantErr != "" {
				require.Error(t, err, "cabpi must refuse Fedora CoreOS behind CAPA's default stub")
				require.Contains(t, stderr.String(), tc.wantErr)
				return
			}
			require.NoError(t, err, stderr.String())
			require.Contains(t, stderr.String(), tc.wantReport)
		})
	}
}
