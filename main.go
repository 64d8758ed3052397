package main

import (
	"flag"
	"fmt"
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

// options are the manager's flags.
type options struct {
	metricsAddr, probeAddr, pprofAddr string
	webhookHost, webhookCertDir       string
	webhookClientCAFile               string
	webhookPort                       int
	enableWebhooks, certRotation      bool
	extraDNSNames                     string
	leaderElect                       bool
	leaderIdentity, namespace         string
	rootNamespace, builderNamespace   string
	concurrency, maxRebuilds, burst   int
	qps                               float64
	buildLimits                       manager.BuildLimits
	zap                               zap.Options
}

func main() {
	o := parseOptions()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	setupLog := ctrl.Log.WithName("setup")
	if err := o.buildLimits.Validate(); err != nil {
		setupLog.Error(err, "invalid --build-timeout, --build-memory or --build-disk")
		os.Exit(1)
	}
	if err := run(o); err != nil {
		setupLog.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}

// parseOptions reads the flags. Every address defaults to loopback; a deployment that must be
// reached from outside the pod (probes, webhooks) says so with these flags.
func parseOptions() options {
	o := options{buildLimits: manager.DefaultBuildLimits()}
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint (HTTPS; each request's token must be allowed to GET /metrics); "0" turns it off.`)
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "0", `Address of Go's /debug/pprof endpoints (plain HTTP, unauthenticated: keep it on loopback); "0" turns them off.`)
	flag.StringVar(&o.webhookHost, "webhook-host", "127.0.0.1", "Host the webhook server listens on.")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the webhook server listens on.")
	flag.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the webhook server; empty means controller-runtime's default.")
	flag.StringVar(&o.webhookClientCAFile, "webhook-client-ca-file", "", "A PEM file of the CAs of the client certificate that the apiserver presents to the webhooks (its AdmissionConfiguration): the webhook server then refuses every connection without a certificate they signed. Empty: any client that reaches the port may call the webhooks.")
	flag.BoolVar(&o.enableWebhooks, "enable-webhooks", true, "Serve the webhooks (turn off when running outside a cluster that cannot reach the manager).")
	flag.BoolVar(&o.certRotation, "cert-rotation", false, "Make the webhook serving certificate in the cluster and renew it: a CA and a certificate in the Secret "+webhookSecret+
		", the CA injected into "+validatingWebhooks+" and "+mutatingWebhooks+". The Secret must be mounted at --webhook-cert-dir.")
	flag.StringVar(&o.extraDNSNames, "cert-extra-dns-names", "", "Comma-separated names for the rotated certificate besides "+webhookService+".<namespace>.svc, for an apiserver that calls the webhooks by another name.")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	flag.StringVar(&o.leaderIdentity, "leader-election-identity", "", "Who holds the lease: unique among the replicas and stable across restarts of one (the pod's name), so that a restarted manager takes its lease back at once. Empty: the host name and a random suffix, which waits for the lease to expire after a crash.")
	flag.StringVar(&o.namespace, "namespace", defaultNamespace(), "The manager's own namespace: its leader-election lease, its webhook Service and certificate. Default: its ServiceAccount's namespace in a pod, else cf-hnc-system.")
	flag.StringVar(&o.rootNamespace, "root-namespace", "cf", "The root namespace: orgs are created in it and their namespaces under it.")
	flag.StringVar(&o.builderNamespace, "builder-namespace", "cf-builders", "The namespace, outside HNC's tree, of the ServiceAccounts that the root's default Builders push with.")
	flag.IntVar(&o.concurrency, "concurrency", 8, "How many spaces, and how many builds, are reconciled at once.")
	flag.IntVar(&o.maxRebuilds, "max-concurrent-rebuilds", 10, "How many rebuild pods (stack fixes, buildpack and lifecycle upgrades) run at once across the foundation; 0 for no limit.")
	flag.Float64Var(&o.qps, "kube-api-qps", 200, "Requests per second to the apiserver that the manager may make, sustained.")
	flag.IntVar(&o.burst, "kube-api-burst", 400, "Requests to the apiserver that the manager may make in a burst.")
	flag.DurationVar(&o.buildLimits.Timeout, "build-timeout", o.buildLimits.Timeout, "How long a build pod may run (at least 1s, in whole seconds) before it is stopped and its build fails: the pod's activeDeadlineSeconds.")
	flag.Var(quantityFlag{&o.buildLimits.Memory}, "build-memory", "The memory `quantity` that each step of a build pod may use: a step over it is killed (OOMKilled). Each step requests "+o.buildLimits.MemoryRequest.String()+" of it (all of it, if less).")
	flag.Var(quantityFlag{&o.buildLimits.Disk}, "build-disk", "The ephemeral-storage `quantity` that each step of a build pod, and so the pod with its volumes, may use: a pod over it is evicted. Each step requests "+o.buildLimits.DiskRequest.String()+" of it (all of it, if less).")
	o.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return o
}

// run makes the manager as the options say, sets cf-hnc up in it and runs it until a signal.
func run(o options) error {
	opts, err := manager.Options(o.rootNamespace)
	if err != nil {
		return fmt.Errorf("cannot configure the manager: %w", err)
	}
	opts.Metrics = metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: true, FilterProvider: metricsauth.Filter}
	opts.HealthProbeBindAddress = o.probeAddr
	opts.PprofBindAddress = o.pprofAddr
	opts.LeaderElection = o.leaderElect
	opts.LeaderElectionID = leaderElectionID
	opts.LeaderElectionNamespace = o.namespace
	// A replica that stops (a rolling update, a restart) hands the lease over at once instead
	// of leaving the others to wait for it to expire.
	opts.LeaderElectionReleaseOnCancel = true
	webhookOpts := webhook.Options{Host: o.webhookHost, Port: o.webhookPort, CertDir: o.webhookCertDir}
	if o.webhookClientCAFile != "" {
		requireClientCertificates, err := manager.ClientCertificates(o.webhookClientCAFile)
		if err != nil {
			return fmt.Errorf("--webhook-client-ca-file: %w", err)
		}
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, requireClientCertificates)
	}
	var rotation *manager.CertRotation
	if o.certRotation && o.enableWebhooks {
		rotation = &manager.CertRotation{Namespace: o.namespace, Secret: webhookSecret, Service: webhookService,
			ValidatingWebhookConfiguration: validatingWebhooks, MutatingWebhookConfiguration: mutatingWebhooks, CertDir: o.webhookCertDir, ExtraDNSNames: splitList(o.extraDNSNames)}
		webhookOpts = rotation.WebhookOptions(webhookOpts)
	}
	opts.WebhookServer = webhook.NewServer(webhookOpts)
	config := ctrl.GetConfigOrDie()
	config.QPS, config.Burst = float32(o.qps), o.burst
	if o.leaderElect && o.leaderIdentity != "" {
		lock, err := manager.LeaderLock(config, o.namespace, leaderElectionID, o.leaderIdentity)
		if err != nil {
			return fmt.Errorf("cannot make the leader-election lock: %w", err)
		}
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(config, opts)
	if err != nil {
		return fmt.Errorf("cannot create the manager: %w", err)
	}
	if err := manager.Setup(mgr, manager.Config{RootNamespace: o.rootNamespace, BuilderNamespace: o.builderNamespace, Webhooks: o.enableWebhooks,
		Concurrency: o.concurrency, MaxConcurrentRebuilds: o.maxRebuilds, BuildLimits: o.buildLimits, CertRotation: rotation}); err != nil {
		return fmt.Errorf("cannot set up the manager: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting the manager", "rootNamespace", o.rootNamespace, "builderNamespace", o.builderNamespace, "namespace", o.namespace,
		"webhooks", o.enableWebhooks, "webhookClientCA", o.webhookClientCAFile, "certRotation", rotation != nil, "leaderElection", o.leaderElect,
		"buildTimeout", o.buildLimits.Timeout, "buildMemory", o.buildLimits.Memory.String(), "buildDisk", o.buildLimits.Disk.String())
	return mgr.Start(ctrl.SetupSignalHandler())
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
