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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
)

// Options configures an Environment. The zero value gives an API server with all CRDs and an
// unstarted Manager, without any CAPI controller.
type Options struct {
	// ClusterCache runs CAPI's ClusterCache (controllers/clustercache). Implied by
	// MachineController, ClusterController, MachineSetController and MachinePoolController.
	ClusterCache bool
	// MachineController runs CAPI's Machine reconciler (core/reconcilers/machine).
	MachineController bool
	// ClusterController runs CAPI's Cluster reconciler (core/reconcilers/cluster). Note that it
	// computes Cluster status itself: see MarkInfrastructureProvisioned/MarkControlPlaneInitialized.
	ClusterController bool
	// MachineSetController runs CAPI's MachineSet reconciler (core/reconcilers/machineset).
	MachineSetController bool
	// MachineDeploymentController runs CAPI's MachineDeployment reconciler
	// (core/reconcilers/machinedeployment). It needs MachineSetController to get Machines.
	MachineDeploymentController bool
	// MachinePoolController runs CAPI's MachinePool reconciler (core/reconcilers/machinepool).
	MachinePoolController bool
	// MachineHealthCheckController runs CAPI's MachineHealthCheck reconciler
	// (core/reconcilers/machinehealthcheck).
	MachineHealthCheckController bool
	// TopologyControllers runs Cluster API's ClusterClass and managed topology reconcilers
	// (core/reconcilers/clusterclass, topology/cluster, topology/machinedeployment,
	// topology/machineset) with the ClusterTopology feature gate on, as a management cluster
	// started with it does. It needs the Cluster, MachineDeployment and MachineSet controllers.
	TopologyControllers bool
	// InPlaceUpdates turns Cluster API's RuntimeSDK and InPlaceUpdates feature gates on
	// (process-wide), gives the Machine and MachineDeployment reconcilers (and, with
	// TopologyControllers, the ClusterClass and topology Cluster ones) a Runtime SDK client
	// (Environment.RuntimeClient) and runs Cluster API's ExtensionConfig reconciler, which
	// discovers the extension an ExtensionConfig names and registers its handlers with that
	// client (see runtimesdk.ExtensionConfigFor, WaitForExtension). StartManager then also
	// waits for the registry's warm-up.
	InPlaceUpdates bool

	// KubeadmCRDs also installs CABPK's KubeadmConfig/KubeadmConfigTemplate CRDs.
	KubeadmCRDs bool
	// KubeadmControlPlaneCRDs also installs KCP's KubeadmControlPlane/KubeadmControlPlaneTemplate
	// CRDs (e.g. for a ClusterClass whose control plane is KubeadmControlPlane). No KCP controller runs.
	KubeadmControlPlaneCRDs bool
	// CRDPaths are where cabpi's CRDs are read from; default <repo>/config/crd/bases. The CAPI
	// contract label is added to each CRD that lacks it.
	CRDPaths []string
	// AdditionalCRDs are installed as given.
	AdditionalCRDs []*apiextensionsv1.CustomResourceDefinition
	// AdditionalCRDPaths are directories/files of CRDs installed as given.
	AdditionalCRDPaths []string
	// AddToScheme registers further types in the Scheme.
	AddToScheme []func(*runtime.Scheme) error

	// Webhooks installs cabpi's webhook configurations (config/webhook/manifests.yaml, what
	// `make manifests` generates), which envtest points at the Manager's webhook server: envtest
	// creates its serving certificates and the Manager serves on them. SetupCabpi then registers
	// the webhooks with the controller, SetupCabpiWebhooks without it. Without Webhooks, register
	// none.
	Webhooks bool

	// ClusterCacheConnectionRetryInterval is how soon the ClusterCache retries a failed connection
	// (e.g. Cluster marked provisioned before its kubeconfig Secret exists). Default 1s (CAPI: 30s).
	ClusterCacheConnectionRetryInterval time.Duration
	// MaxConcurrentReconciles for each CAPI controller; default 5.
	MaxConcurrentReconciles int
	// KeepReconcilerRateLimiting keeps CAPI's ReconcilerRateLimiting feature gate (on by default
	// in CAPI: at most one reconcile per object per second, which makes a Machine take seconds
	// to go through its first reconciles). By default the harness turns it off, process-wide.
	KeepReconcilerRateLimiting bool

	// APIServerArgs sets kube-apiserver flags (name without the leading dashes, e.g.
	// "enable-admission-plugins"), each replacing envtest's default for that flag, if any.
	// envtest's defaults include authorization-mode=RBAC and disable-admission-plugins=ServiceAccount;
	// enable-admission-plugins has no default there, and the API server adds what it names to the
	// plugins it enables by default.
	APIServerArgs map[string][]string

	// Logger for controllers and client-go; default: discard, or stderr with
	// CABPI_TEST_LOG=<verbosity>. Logging is set up once per process.
	Logger *logr.Logger
}

// capiControllers says whether any of Cluster API's controllers run.
func (o Options) capiControllers() bool {
	return o.MachineController || o.ClusterController || o.MachineSetController || o.MachineDeploymentController ||
		o.MachinePoolController || o.MachineHealthCheckController || o.TopologyControllers
}

func (o Options) clusterCacheNeeded() bool {
	return o.ClusterCache || o.capiControllers()
}

// Environment is a running envtest with a Manager.
type Environment struct {
	// Config is the admin rest.Config of the envtest API server.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme: reads see every write at once.
	Client client.Client
	// Scheme has client-go, apiextensions/v1, CAPI core v1beta2, CAPI kubeadm bootstrap v1beta2
	// and cabpi v1alpha1 types (plus Options.AddToScheme).
	Scheme *runtime.Scheme
	// Manager is created but not started: register reconcilers (SetupCabpi), then call
	// StartManager. Its options are the cabpi manager's (setup.ManagerOptions): the same caches,
	// and Secrets and ConfigMaps read live.
	Manager ctrl.Manager
	// ClusterCache is CAPI's ClusterCache, nil unless enabled in Options.
	ClusterCache clustercache.ClusterCache
	// RuntimeClient is the Runtime SDK client Cluster API's controllers call extensions
	// through, nil unless Options.InPlaceUpdates.
	RuntimeClient *runtimesdk.Client
	// TestEnv is the underlying envtest environment.
	TestEnv *envtest.Environment
	// RepoRoot is the cabpi repository root; CAPIDir the sigs.k8s.io/cluster-api module directory.
	RepoRoot, CAPIDir string

	opts   Options
	ctx    context.Context // setup context (reconcilers' SetupWithManager), cancelled by Stop
	cancel context.CancelFunc

	mu        sync.Mutex
	mgrCancel context.CancelFunc
	mgrDone   chan error
	stopOnce  sync.Once
	stopErr   error
}

var (
	logOnce sync.Once
	envSeq  atomic.Int32
)

func setupLogging(opts Options) {
	logOnce.Do(func() {
		l := logr.Discard()
		switch {
		case opts.Logger != nil:
			l = *opts.Logger
		case os.Getenv("CABPI_TEST_LOG") != "":
			v, _ := strconv.Atoi(os.Getenv("CABPI_TEST_LOG"))
			l = textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(v), textlogger.Output(os.Stderr)))
		}
		ctrl.SetLogger(l)
		klog.SetLogger(l)
	})
}

// NewScheme returns the harness scheme (see Environment.Scheme).
func NewScheme(extra ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	adders := []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme,
		kubeadmv1.AddToScheme,
		cabpiv1.AddToScheme,
	}
	for _, add := range append(adders, extra...) {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start starts etcd and kube-apiserver, installs the CRDs, creates the Manager and sets up the
// CAPI controllers selected in opts. The Manager is not started: call StartManager. ctx bounds
// the life of what is set up (CAPI's reconcilers get it); Stop cancels it too.
func Start(ctx context.Context, opts Options) (_ *Environment, retErr error) {
	setupLogging(opts)
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 5
	}
	if opts.ClusterCacheConnectionRetryInterval <= 0 {
		opts.ClusterCacheConnectionRetryInterval = time.Second
	}

	if !opts.KeepReconcilerRateLimiting {
		// Process-global; read when CAPI's controllers are built and on every reconcile.
		if err := feature.MutableGates.Set(string(feature.ReconcilerRateLimiting) + "=false"); err != nil {
			return nil, fmt.Errorf("testenv: disabling feature gate %s: %w", feature.ReconcilerRateLimiting, err)
		}
	}

	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	capiDir, err := CAPIModuleDir(root)
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	adders := opts.AddToScheme
	if opts.TopologyControllers || opts.InPlaceUpdates {
		// The ClusterClass controller watches ExtensionConfigs (Runtime SDK), gate on or off;
		// the ExtensionConfig controller reconciles them.
		adders = append(append([]func(*runtime.Scheme) error(nil), adders...), runtimev1.AddToScheme)
	}
	scheme, err := NewScheme(adders...)
	if err != nil {
		return nil, fmt.Errorf("testenv: building scheme: %w", err)
	}

	crdPaths := opts.CRDPaths
	if len(crdPaths) == 0 {
		crdPaths = []string{filepath.Join(root, "config", "crd", "bases")}
	}
	ownCRDs, err := readCRDsWithContractLabel(crdPaths)
	if err != nil {
		return nil, err
	}
	crds := append(genericCRDs(), ownCRDs...)
	if providerPaths := capiProviderCRDPaths(capiDir, opts.KubeadmCRDs, opts.KubeadmControlPlaneCRDs); len(providerPaths) > 0 {
		providerCRDs, err := readCRDsWithContractLabel(providerPaths)
		if err != nil {
			return nil, err
		}
		crds = append(crds, providerCRDs...)
	}
	crds = append(crds, opts.AdditionalCRDs...)

	logV := 0
	if v := os.Getenv("CABPI_TEST_LOG"); v != "" {
		logV, _ = strconv.Atoi(v)
	}
	te := &envtest.Environment{
		Scheme:                   scheme,
		CRDs:                     crds,
		CRDDirectoryPaths:        append(capiCRDPaths(capiDir), opts.AdditionalCRDPaths...),
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		AttachControlPlaneOutput: logV >= 6,
	}
	if opts.Webhooks {
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
		}
	}
	for flag, values := range opts.APIServerArgs {
		te.ControlPlane.GetAPIServer().Configure().Set(flag, values...)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, kerrors.NewAggregate([]error{fmt.Errorf("testenv: starting envtest (assets %s): %w", assets, err), te.Stop()})
	}

	ctx, cancel := context.WithCancel(ctx)
	e := &Environment{
		Config:   cfg,
		Scheme:   scheme,
		TestEnv:  te,
		RepoRoot: root,
		CAPIDir:  capiDir,
		opts:     opts,
		ctx:      ctx,
		cancel:   cancel,
	}
	defer func() {
		if retErr != nil {
			retErr = kerrors.NewAggregate([]error{retErr, e.Stop()})
		}
	}()

	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("testenv: creating client: %w", err)
	}
	if err := backdateCRDsEstablished(ctx, e.Client, te.CRDs); err != nil {
		return nil, err
	}
	if err := warmUpCRDStorage(ctx, e.Client, te.CRDs); err != nil {
		return nil, err
	}

	mgrOpts, err := managerOptions(scheme, opts, te.WebhookInstallOptions)
	if err != nil {
		return nil, err
	}
	if e.Manager, err = ctrl.NewManager(cfg, mgrOpts); err != nil {
		return nil, fmt.Errorf("testenv: creating manager: %w", err)
	}
	// Names Cluster API's ClusterCache client (user agent); unique per Environment of a process.
	name := fmt.Sprintf("cabpi-testenv-%d", envSeq.Add(1))
	if err := e.setupCAPI(ctx, name); err != nil {
		return nil, err
	}
	return e, nil
}

// managerOptions are the cabpi manager's options (setup.ManagerOptions of CabpiOptions: the
// flags' defaults, so its cache and client set-up, which the reconciler under test and Cluster
// API's controllers next to it read through) with what envtest needs instead: the harness
// scheme, no metrics endpoint or health probes, controller names allowed again (a process may
// run one Environment after another) and, with Options.Webhooks, the webhook server on the host,
// port and certificates envtest configured (install is what te.Start filled in).
//
// With Cluster API's Cluster, MachineSet or MachineDeployment controller, the cache keeps
// managedFields, as Cluster API's own manager does (core/setup strips them only in the workload
// clusters' caches): those controllers treat an object without managedFields as hit by a
// kube-apiserver bug (kubernetes#136919), patch its managedFields back and return before they
// act, so with cabpi's stripping cache a MachineDeployment never scales.
func managerOptions(scheme *runtime.Scheme, opts Options, install envtest.WebhookInstallOptions) (ctrl.Options, error) {
	mgrOpts, err := setup.ManagerOptions(CabpiOptions()) // the webhook server is envtest's, below
	if err != nil {
		return ctrl.Options{}, fmt.Errorf("testenv: the manager's options: %w", err)
	}
	mgrOpts.Scheme = scheme
	mgrOpts.Controller.SkipNameValidation = ptr.To(true)
	if opts.ClusterController || opts.MachineSetController || opts.MachineDeploymentController || opts.TopologyControllers {
		mgrOpts.Cache.DefaultTransform = nil
	}
	if opts.capiControllers() {
		// Cluster API's controllers read the objects they reference (infrastructure machines,
		// bootstrap configs, control planes, templates) as unstructured objects, through the
		// cache, as Cluster API's own manager has them do (core/setup.ManagerClientOptions, which
		// also keeps Secrets and ConfigMaps out of the cache, as cabpi's does). Without it each of
		// those reads is a request to the API server: thousands a minute in the real-node suite.
		// cabpi's own unstructured read (the infrastructure machine's delivery) goes past the
		// cache either way (controllers.Reconciler.APIReader).
		mgrOpts.Client = capisetup.ManagerClientOptions()
	}
	if opts.Webhooks {
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    install.LocalServingHost,
			Port:    install.LocalServingPort,
			CertDir: install.LocalServingCertDir,
		})
	}
	return mgrOpts, nil
}

// Context is the Environment's context, cancelled by Stop; pass it to SetupWithManager.
func (e *Environment) Context() context.Context { return e.ctx }

// StartManager starts the Manager in a goroutine and returns once its caches are synced (and the
// webhook server serves, with Options.Webhooks). The Manager stops when ctx is done or on Stop.
func (e *Environment) StartManager(ctx context.Context) error {
	e.mu.Lock()
	if e.mgrCancel != nil {
		e.mu.Unlock()
		return errors.New("testenv: manager already started")
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	e.mgrCancel, e.mgrDone = cancel, done
	e.mu.Unlock()

	var srv webhook.Server
	if e.opts.Webhooks {
		srv = e.Manager.GetWebhookServer() // adds it to the Manager's runnables
	}
	go func() { done <- e.Manager.Start(mgrCtx) }()

	select {
	case <-e.Manager.Elected():
	case err := <-done:
		done <- err // for Stop
		return fmt.Errorf("testenv: manager exited at start: %w", err)
	}
	if !e.Manager.GetCache().WaitForCacheSync(mgrCtx) {
		return errors.New("testenv: manager cache did not sync")
	}
	if err := e.waitForRuntimeSDKWarmUp(mgrCtx); err != nil {
		return err
	}
	if srv != nil {
		err := wait.PollUntilContextTimeout(mgrCtx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return srv.StartedChecker()(nil) == nil, nil
		})
		if err != nil {
			return fmt.Errorf("testenv: webhook server did not start: %w", err)
		}
	}
	return nil
}

// Stop shuts down, in this order, the ClusterCache's per-cluster caches (their watches would
// keep kube-apiserver from stopping within envtest's 20s), the Manager (waiting for it to
// return), the Environment's context and envtest. Safe to call more than once.
func (e *Environment) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		if s, ok := e.ClusterCache.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
		e.mu.Lock()
		cancel, done := e.mgrCancel, e.mgrDone
		e.mu.Unlock()
		if cancel != nil {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					errs = append(errs, fmt.Errorf("testenv: manager: %w", err))
				}
			case <-time.After(time.Minute):
				errs = append(errs, errors.New("testenv: manager did not stop within 1m"))
			}
		}
		if e.cancel != nil {
			e.cancel()
		}
		if err := e.TestEnv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("testenv: stopping envtest: %w", err))
		}
		e.stopErr = kerrors.NewAggregate(errs)
	})
	return e.stopErr
}
