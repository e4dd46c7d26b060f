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

// Package setup is the one wiring of cabpi's manager: the scheme, the flags and their defaults,
// the cache and client options, Cluster API's ClusterCache, the IgnitionConfig controller and the
// webhooks. The manager command (cmd/manager) and every test that runs the reconciler start it
// through here, so a test cannot pass on wiring the binary does not use.
package setup

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/locking"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	capiflags "sigs.k8s.io/cluster-api/util/flags"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/secretcache"
)

// Scheme holds every type the manager reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(cabpiv1.AddToScheme(s))
	return s
}

// Options are the manager's flags.
type Options struct {
	Namespace        string
	WatchFilter      string
	LeaderElect      bool
	LeaderElectionID string
	// LeaderElectionNamespace holds the lease. Empty: the manager's own namespace in a Pod, else
	// --namespace; outside a Pod without --namespace it must be set.
	LeaderElectionNamespace string
	// Diagnostics are Cluster API's manager flags: the metrics endpoint (--diagnostics-address,
	// HTTPS with the API server's authentication and authorization unless
	// --insecure-diagnostics) and the TLS settings of it and the webhook server.
	Diagnostics        capiflags.ManagerOptions
	HealthProbeAddress string
	// ProfilerAddress serves net/http/pprof (e.g. localhost:6060); empty disables it.
	ProfilerAddress    string
	WebhookPort        int
	WebhookCertDir     string
	Concurrency        int
	ClusterConcurrency int
	SyncPeriod         time.Duration
	BootstrapTokenTTL  time.Duration
	// KubeAPIQPS and KubeAPIBurst limit the management cluster client; ClusterCacheClientQPS
	// and ClusterCacheClientBurst each workload cluster's (join tokens). Zero keeps client-go's
	// default; the flags default to what Cluster API's managers use.
	KubeAPIQPS              float32
	KubeAPIBurst            int
	ClusterCacheClientQPS   float32
	ClusterCacheClientBurst int
	// UpdateExtensionPort serves the in-place update extension (Cluster API's Runtime SDK, with
	// the webhook server's certificate); 0 disables it.
	UpdateExtensionPort int
	// UpdateExtensionHost is the address the extension listens on; empty: every address. Tests
	// set 127.0.0.1 (no flag: in a Pod every address is the Pod's).
	UpdateExtensionHost string
	// UpdateImage is the image the update Jobs run; empty: the manager's own, by the digest its
	// node pulled (read from its Pod).
	UpdateImage string
	// UpdateImagePullSecrets name Secrets of the workload clusters' kube-system the update Jobs
	// pull their image with.
	UpdateImagePullSecrets []string
	// UpdateExtensionClientCA names a PEM CA bundle in WebhookCertDir; when set, the extension
	// answers only callers with a client certificate it signs (docs/adr/040).
	UpdateExtensionClientCA string

	// Test knobs: no flag sets them; zero keeps what the manager uses.

	// ReferenceRecheckInterval is the controller's ReferenceRecheckInterval; zero:
	// controllers.DefaultReferenceRecheckInterval. Tests shorten it to see a change of an
	// unlabelled reference within seconds.
	ReferenceRecheckInterval time.Duration
	// InitLock replaces the kubeadm init lock (nil: Cluster API's ConfigMap lock, which survives
	// manager restarts), for tests that decide who gets kubeadm init without a ConfigMap.
	InitLock controllers.InitLocker
}

// AddFlags binds o to fs: the manager's flags, with the binary's defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", "", "Namespace to watch; empty watches all namespaces.")
	fs.StringVar(&o.WatchFilter, "watch-filter", "", fmt.Sprintf("Only reconcile objects whose label %s has this value.", clusterv1.WatchLabel))
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Use leader election (run several replicas).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "cabpi-controller-leader-election", "Name of the leader election lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election lease; default: the Pod's namespace, or --namespace when run outside a Pod.")
	capiflags.AddManagerOptions(fs, &o.Diagnostics)
	fs.StringVar(&o.HealthProbeAddress, "health-probe-bind-address", ":9440", "Address of /healthz and /readyz; 0 disables them.")
	fs.StringVar(&o.ProfilerAddress, "profiler-address", "", "Address of the pprof endpoint (e.g. localhost:6060); empty disables it.")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the admission webhook server; 0 disables webhooks (no certificates needed).")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory with tls.crt and tls.key for the webhook server.")
	fs.IntVar(&o.Concurrency, "concurrency", 100, "IgnitionConfigs reconciled at once (CABPK's --kubeadmconfig-concurrency default: most of a reconcile is waiting on the API servers' rate limiters).")
	fs.IntVar(&o.ClusterConcurrency, "clustercache-concurrency", 100, "Workload cluster connections set up at once.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Minute, "How often every watched object is reconciled again.")
	fs.DurationVar(&o.BootstrapTokenTTL, "bootstrap-token-ttl", controllers.DefaultTokenTTL, "Lifetime of join tokens; refreshed until the node joined, rotated for MachinePools.")
	// Cluster API's managers' flags and defaults.
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", 100, "Maximum queries per second from the controller client to the Kubernetes API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 200, "Maximum number of queries that should be allowed in one burst from the controller client to the Kubernetes API server.")
	fs.Float32Var(&o.ClusterCacheClientQPS, "clustercache-client-qps", 20, "Maximum queries per second from the cluster cache clients to the Kubernetes API server of workload clusters.")
	fs.IntVar(&o.ClusterCacheClientBurst, "clustercache-client-burst", 30, "Maximum number of queries that should be allowed in one burst from the cluster cache clients to the Kubernetes API server of workload clusters.")
	fs.IntVar(&o.UpdateExtensionPort, "update-extension-port", 0,
		"Port of the in-place update extension (Cluster API Runtime SDK hooks CanUpdateMachineSet and UpdateMachine; served with --webhook-cert-dir's certificate); 0 disables it.")
	fs.StringVar(&o.UpdateExtensionClientCA, "update-extension-client-ca", "",
		"Name of a PEM CA bundle in --webhook-cert-dir (ca.crt of a cert-manager Secret): when set, the update extension requires a client certificate signed by it "+
			"(Cluster API's core manager presents one with --runtime-extension-client-cert-file and --runtime-extension-client-key-file); empty: any client.")
	fs.StringVar(&o.UpdateImage, "update-image", "", "Image the in-place update Jobs run on workload nodes (name it by digest); default: the manager's own image, by the digest its node pulled, read from its Pod (POD_NAMESPACE, POD_NAME).")
	fs.StringSliceVar(&o.UpdateImagePullSecrets, "update-image-pull-secrets", nil, "Secrets in each workload cluster's kube-system the in-place update Jobs pull their image with (comma-separated names).")
}

// ParseCommandLine parses the manager's command line into its options and its logging options
// (controller-runtime's zap flags, --kubeconfig and Cluster API's feature gates come along).
func ParseCommandLine(args []string) (Options, zap.Options, error) {
	opts := Options{}
	fs := pflag.NewFlagSet("cabpi", pflag.ContinueOnError)
	opts.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("cabpi", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	// --kubeconfig is registered by controller-runtime on the global flag set.
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil {
		goFlags.Var(f.Value, f.Name, f.Usage)
	}
	fs.AddGoFlagSet(goFlags)
	feature.MutableGates.AddFlag(fs)
	if err := fs.Parse(args); err != nil {
		return Options{}, zap.Options{}, err
	}
	return opts, zapOpts, nil
}

// leaderElectionNamespace picks where the lease lives. In a Pod controller-runtime finds the
// Pod's namespace by itself; a manager run as a plain process (against any kubeconfig) has none,
// so --namespace stands in for it.
func leaderElectionNamespace(opts Options) string {
	if opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace
	}
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return ""
	}
	return opts.Namespace
}

// DefaultOptions are the options the flags default to.
func DefaultOptions() Options {
	opts := Options{}
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	opts.AddFlags(fs)
	_ = fs.Parse(nil)
	return opts
}

// Run starts the manager with opts until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	log := ctrl.Log.WithName("setup")
	mgr, err := NewManager(cfg, opts)
	if err != nil {
		return err
	}
	if err := Setup(ctx, mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	log.Info("Starting manager", "namespace", opts.Namespace, "webhooks", opts.WebhookPort != 0)
	return mgr.Start(ctx)
}

// NewManager creates the controller-runtime manager with the cache and client set-up of the
// cabpi manager (ManagerOptions; hack/bench measures exactly this); Setup registers the
// controllers on it. adjust changes the options before the manager is created (hack/bench and
// the test harness run several managers in one process, which needs controller name validation
// off).
func NewManager(cfg *rest.Config, opts Options, adjust ...func(*ctrl.Options)) (ctrl.Manager, error) {
	mgrOpts, err := ManagerOptions(opts)
	if err != nil {
		return nil, err
	}
	for _, a := range adjust {
		a(&mgrOpts)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// ManagerOptions are the options NewManager creates the manager with: the scheme, leader
// election, the probes, the diagnostics (metrics) endpoint, the webhook server and the cache and
// client set-up. The test harness (test/framework/testenv) builds its manager from them too, so
// the reconciler under test reads through the caches the binary configures.
func ManagerOptions(opts Options) (ctrl.Options, error) {
	tlsOpts, metricsOpts, err := capiflags.GetManagerOptions(opts.Diagnostics)
	if err != nil {
		return ctrl.Options{}, fmt.Errorf("diagnostics and TLS flags: %w", err)
	}
	mgrOpts := ctrl.Options{
		Scheme:                  Scheme(),
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: leaderElectionNamespace(opts),
		HealthProbeBindAddress:  opts.HealthProbeAddress,
		PprofBindAddress:        opts.ProfilerAddress,
		Metrics:                 *metricsOpts,
		Cache: cache.Options{
			SyncPeriod:       &opts.SyncPeriod,
			DefaultTransform: cache.TransformStripManagedFields(),
			// Only cluster-labelled Secrets, read through the Reconciler's SecretCachingClient, and
			// cluster-labelled ConfigMaps without data, watched for changes to references.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}:    secretcache.ByObject(),
				&corev1.ConfigMap{}: secretcache.ConfigMapByObject(),
			},
		},
		Client: client.Options{Cache: &client.CacheOptions{
			// The manager's client reads Secrets and ConfigMaps from the API server: caching
			// every Secret and ConfigMap of the management cluster would hold all of them in
			// memory. Cluster-labelled Secrets are read through the cache (secretcache).
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	}
	if opts.Namespace != "" {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	if opts.WebhookPort != 0 {
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{Port: opts.WebhookPort, CertDir: opts.WebhookCertDir, TLSOpts: tlsOpts})
	}
	return mgrOpts, nil
}

// Setup registers the ClusterCache, the IgnitionConfig controller and (when the manager has a
// webhook server) the webhooks on mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	cc, err := NewClusterCache(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return SetupControllers(ctx, mgr, cc, opts)
}

// NewClusterCache sets up Cluster API's ClusterCache: clients for workload clusters, built from
// their <cluster>-kubeconfig Secrets. Secrets of workload clusters are not cached either.
func NewClusterCache(ctx context.Context, mgr ctrl.Manager, opts Options) (clustercache.ClusterCache, error) {
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:     mgr.GetAPIReader(),
		WatchFilterValue: opts.WatchFilter,
		Client: clustercache.ClientOptions{
			QPS:       opts.ClusterCacheClientQPS,
			Burst:     opts.ClusterCacheClientBurst,
			UserAgent: "cabpi",
			Cache:     clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.Secret{}}},
		},
	}, controller.Options{MaxConcurrentReconciles: max(opts.ClusterConcurrency, 1)})
	if err != nil {
		return nil, fmt.Errorf("setting up the ClusterCache: %w", err)
	}
	return cc, nil
}

// SetupControllers registers the IgnitionConfig controller (using cc for workload clusters) and
// the webhooks. Tests and the demo call it with a ClusterCache they share with Cluster API's
// own controllers.
func SetupControllers(ctx context.Context, mgr ctrl.Manager, cc clustercache.ClusterCache, opts Options) error {
	// Reads through the manager's cache, Secrets included (Cluster API's helper; CABPK does the same).
	secretCachingClient, err := capisetup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("creating the Secret caching client: %w", err)
	}
	initLock := opts.InitLock
	if initLock == nil {
		// A ConfigMap owned by the Cluster, as CABPK's: it outlives a manager that dies during init.
		initLock = locking.NewControlPlaneInitMutex(mgr.GetClient())
	}
	r := &controllers.Reconciler{
		Client:                   mgr.GetClient(),
		SecretCachingClient:      secretCachingClient,
		APIReader:                mgr.GetAPIReader(),
		ClusterCache:             cc,
		Recorder:                 mgr.GetEventRecorder("ignitionconfig-controller"),
		WatchFilterValue:         opts.WatchFilter,
		TokenTTL:                 opts.BootstrapTokenTTL,
		InitLock:                 initLock,
		Clock:                    clock.RealClock{},
		ReferenceRecheckInterval: opts.ReferenceRecheckInterval, // zero: the default
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: max(opts.Concurrency, 1)}); err != nil {
		return err
	}
	if err := SetupUpdateExtension(ctx, mgr, cc, opts); err != nil {
		return err
	}
	return SetupWebhooks(mgr, opts)
}
