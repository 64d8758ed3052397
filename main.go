// The cf-hnc manager: Cloud Foundry orgs and spaces as HNC namespaces, build configuration
// placed once per org and propagated to every space, and staging with kpack.
package main

import (
	"flag"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"code.cloudfoundry.org/cf-hnc/internal/metricsauth"
	"code.cloudfoundry.org/cf-hnc/manager"
)

// The names that config/default gives the manager's objects in its namespace.
const (
	webhookService     = "cf-hnc-webhook-service"
	webhookSecret      = "cf-hnc-webhook-server-cert"
	validatingWebhooks = "cf-hnc-validating-webhook-configuration"
	mutatingWebhooks   = "cf-hnc-mutating-webhook-configuration"
	leaderElectionID   = "cf-hnc.workloads.cloudfoundry.org"
)

// The metrics endpoint checks each scrape's token and its right to GET /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	var (
		metricsAddr      string
		probeAddr        string
		pprofAddr        string
		webhookHost      string
		webhookPort      int
		webhookCertDir   string
		enableWebhooks   bool
		certRotation     bool
		extraDNSNames    string
		leaderElect      bool
		leaderIdentity   string
		namespace        string
		rootNamespace    string
		builderNamespace string
		concurrency      int
		maxRebuilds      int
		qps              float64
		burst            int
		buildLimits      = manager.DefaultBuildLimits()
	)
	// Every address defaults to loopback; a deployment that must be reached from outside the
	// pod (probes, webhooks) says so with these flags.
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint (HTTPS; each request's token must be allowed to GET /metrics); "0" turns it off.`)
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", `Address of Go's /debug/pprof endpoints (plain HTTP, unauthenticated: keep it on loopback); "0" turns them off.`)
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "Host the webhook server listens on.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port the webhook server listens on.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the webhook server; empty means controller-runtime's default.")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "Serve the webhooks (turn off when running outside a cluster that cannot reach the manager).")
	flag.BoolVar(&certRotation, "cert-rotation", false, "Make the webhook serving certificate in the cluster and renew it: a CA and a certificate in the Secret "+webhookSecret+
		", the CA injected into "+validatingWebhooks+" and "+mutatingWebhooks+". The Secret must be mounted at --webhook-cert-dir.")
	flag.StringVar(&extraDNSNames, "cert-extra-dns-names", "", "Comma-separated names for the rotated certificate besides "+webhookService+".<namespace>.svc, for an apiserver that calls the webhooks by another name.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	flag.StringVar(&leaderIdentity, "leader-election-identity", "", "Who holds the lease: unique among the replicas and stable across restarts of one (the pod's name), so that a restarted manager takes its lease back at once. Empty: the host name and a random suffix, which waits for the lease to expire after a crash.")
	flag.StringVar(&namespace, "namespace", defaultNamespace(), "The manager's own namespace: its leader-election lease, its webhook Service and certificate. Default: its ServiceAccount's namespace in a pod, else cf-hnc-system.")
	flag.StringVar(&rootNamespace, "root-namespace", "cf", "The root namespace: orgs are created in it and their namespaces under it.")
	flag.StringVar(&builderNamespace, "builder-namespace", "cf-builders", "The namespace, outside HNC's tree, of the ServiceAccounts that the root's default Builders push with.")
	flag.IntVar(&concurrency, "concurrency", 8, "How many spaces, and how many builds, are reconciled at once.")
	flag.IntVar(&maxRebuilds, "max-concurrent-rebuilds", 10, "How many rebuild pods (stack fixes, buildpack and lifecycle upgrades) run at once across the foundation; 0 for no limit.")
	flag.Float64Var(&qps, "kube-api-qps", 200, "Requests per second to the apiserver that the manager may make, sustained.")
	flag.IntVar(&burst, "kube-api-burst", 400, "Requests to the apiserver that the manager may make in a burst.")
	flag.DurationVar(&buildLimits.Timeout, "build-timeout", buildLimits.Timeout, "How long a build pod may run (at least 1s, in whole seconds) before it is stopped and its build fails: the pod's activeDeadlineSeconds.")
	flag.Var(quantityFlag{&buildLimits.Memory}, "build-memory", "The memory `quantity` that each step of a build pod may use: a step over it is killed (OOMKilled). Each step requests "+buildLimits.MemoryRequest.String()+" of it (all of it, if less).")
	flag.Var(quantityFlag{&buildLimits.Disk}, "build-disk", "The ephemeral-storage `quantity` that each step of a build pod, and so the pod with its volumes, may use: a pod over it is evicted. Each step requests "+buildLimits.DiskRequest.String()+" of it (all of it, if less).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")
	if err := buildLimits.Validate(); err != nil {
		setupLog.Error(err, "invalid --build-timeout, --build-memory or --build-disk")
		os.Exit(1)
	}

	opts, err := manager.Options(rootNamespace)
	if err != nil {
		setupLog.Error(err, "cannot configure the manager")
		os.Exit(1)
	}
	opts.Metrics = metricsserver.Options{BindAddress: metricsAddr, SecureServing: true,
		FilterProvider: metricsauth.Filter}
	opts.HealthProbeBindAddress = probeAddr
	opts.PprofBindAddress = pprofAddr
	opts.LeaderElection = leaderElect
	opts.LeaderElectionID = leaderElectionID
	opts.LeaderElectionNamespace = namespace
	// A replica that stops (a rolling update, a restart) hands the lease over at once instead
	// of leaving the others to wait for it to expire.
	opts.LeaderElectionReleaseOnCancel = true
	webhookOpts := webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir}
	var rotation *manager.CertRotation
	if certRotation && enableWebhooks {
		rotation = &manager.CertRotation{Namespace: namespace, Secret: webhookSecret, Service: webhookService,
			ValidatingWebhookConfiguration: validatingWebhooks, MutatingWebhookConfiguration: mutatingWebhooks, CertDir: webhookCertDir, ExtraDNSNames: splitList(extraDNSNames)}
		webhookOpts = rotation.WebhookOptions(webhookOpts)
	}
	opts.WebhookServer = webhook.NewServer(webhookOpts)
	config := ctrl.GetConfigOrDie()
	config.QPS, config.Burst = float32(qps), burst
	if leaderElect && leaderIdentity != "" {
		lock, err := manager.LeaderLock(config, namespace, leaderElectionID, leaderIdentity)
		if err != nil {
			setupLog.Error(err, "cannot make the leader-election lock")
			os.Exit(1)
		}
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(config, opts)
	if err != nil {
		setupLog.Error(err, "cannot create the manager")
		os.Exit(1)
	}
	if err := manager.Setup(mgr, manager.Config{RootNamespace: rootNamespace, BuilderNamespace: builderNamespace, Webhooks: enableWebhooks,
		Concurrency: concurrency, MaxConcurrentRebuilds: maxRebuilds, BuildLimits: buildLimits, CertRotation: rotation}); err != nil {
		setupLog.Error(err, "cannot set up the manager")
		os.Exit(1)
	}
	setupLog.Info("starting the manager", "rootNamespace", rootNamespace, "builderNamespace", builderNamespace, "namespace", namespace,
		"webhooks", enableWebhooks, "certRotation", rotation != nil, "leaderElection", leaderElect,
		"buildTimeout", buildLimits.Timeout, "buildMemory", buildLimits.Memory.String(), "buildDisk", buildLimits.Disk.String())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}

// defaultNamespace is the namespace of the pod's ServiceAccount, or cf-hnc-system out of a pod.
func defaultNamespace() string {
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
		return strings.TrimSpace(string(ns))
	}
	return "cf-hnc-system"
}

func splitList(s string) []string {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// quantityFlag is a flag that holds a resource quantity, such as 1Gi.
type quantityFlag struct{ q *resource.Quantity }

func (f quantityFlag) String() string {
	if f.q == nil {
		return ""
	}
	return f.q.String()
}

func (f quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*f.q = q
	return nil
}
