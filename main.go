// The cf-hnc manager: Cloud Foundry orgs and spaces as HNC namespaces, build configuration
// placed once per org and propagated to every space, and staging with kpack.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"code.cloudfoundry.org/cf-hnc/manager"
)

func main() {
	var (
		metricsAddr    string
		probeAddr      string
		webhookHost    string
		webhookPort    int
		webhookCertDir string
		enableWebhooks bool
		leaderElect    bool
		rootNamespace  string
		concurrency    int
		maxRebuilds    int
		qps            float64
		burst          int
	)
	// Every address defaults to loopback; a deployment that must be reached from outside the
	// pod (probes, webhooks) says so with these flags.
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint; "0" turns it off.`)
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "Host the webhook server listens on.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port the webhook server listens on.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the webhook server; empty means controller-runtime's default.")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "Serve the validating webhooks (turn off when running outside a cluster that cannot reach the manager).")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	flag.StringVar(&rootNamespace, "root-namespace", "cf", "The root namespace: orgs are created in it and their namespaces under it.")
	flag.IntVar(&concurrency, "concurrency", 8, "How many spaces, and how many builds, are reconciled at once.")
	flag.IntVar(&maxRebuilds, "max-concurrent-rebuilds", 10, "How many rebuild pods (stack fixes, buildpack and lifecycle upgrades) run at once across the foundation; 0 for no limit.")
	flag.Float64Var(&qps, "kube-api-qps", 200, "Requests per second to the apiserver that the manager may make, sustained.")
	flag.IntVar(&burst, "kube-api-burst", 400, "Requests to the apiserver that the manager may make in a burst.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")

	opts := manager.Options()
	opts.Metrics = metricsserver.Options{BindAddress: metricsAddr}
	opts.HealthProbeBindAddress = probeAddr
	opts.LeaderElection = leaderElect
	opts.LeaderElectionID = "cf-hnc.workloads.cloudfoundry.org"
	opts.WebhookServer = webhook.NewServer(webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir})
	config := ctrl.GetConfigOrDie()
	config.QPS, config.Burst = float32(qps), burst
	mgr, err := ctrl.NewManager(config, opts)
	if err != nil {
		setupLog.Error(err, "cannot create the manager")
		os.Exit(1)
	}
	if err := manager.Setup(mgr, manager.Config{RootNamespace: rootNamespace, Webhooks: enableWebhooks, Concurrency: concurrency, MaxConcurrentRebuilds: maxRebuilds}); err != nil {
		setupLog.Error(err, "cannot set up the manager")
		os.Exit(1)
	}
	setupLog.Info("starting the manager", "rootNamespace", rootNamespace, "webhooks", enableWebhooks)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}
