package manager

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/builders"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
	orgspace "code.cloudfoundry.org/cf-hnc/org-space"
	"code.cloudfoundry.org/cf-hnc/processes"
	"code.cloudfoundry.org/cf-hnc/propagation"
	"code.cloudfoundry.org/cf-hnc/rollout"
	"code.cloudfoundry.org/cf-hnc/staging"
	"code.cloudfoundry.org/cf-hnc/upgrades"
)

// BuildLimits bound every build pod that staging starts (staging.BuildLimits).
type BuildLimits = staging.BuildLimits

// DefaultBuildLimits are the build limits of a manager that is given none.
func DefaultBuildLimits() BuildLimits { return staging.DefaultBuildLimits() }

// Config is what the reconcilers need to know about the installation.
type Config struct {
	// RootNamespace holds the CFOrgs; org namespaces are made under it.
	RootNamespace string
	// BuilderNamespace, outside HNC's tree, holds the ServiceAccounts that the root's default
	// Builders push with.
	BuilderNamespace string
	// Webhooks serves the validating webhooks.
	Webhooks bool
	// Concurrency is how many spaces, and how many builds, are reconciled at once.
	Concurrency int
	// MaxConcurrentRebuilds is how many rebuild pods (kpack's and cf-hnc's own rebases) run at
	// once across the foundation; below 1, all at once.
	MaxConcurrentRebuilds int
	// BuildLimits bound every build pod that staging starts: its timeout, and each step's
	// memory and disk. A zero field takes its default (DefaultBuildLimits).
	BuildLimits BuildLimits
	// CertRotation, if set, makes and rotates the webhook serving certificate in the cluster;
	// the webhook server must have been made with its WebhookOptions. Nil: the certificate
	// comes from elsewhere (cert-manager, the tests' own).
	CertRotation *CertRotation
}

// Options returns manager options with cf-hnc's scheme and cache (cacheOptions), for the tree
// under root.
// The manager's client counts its writes (cf_hnc_api_writes_total), so that operators and the
// benchmark see what cf-hnc costs the apiserver, and that it writes nothing when idle.
func Options(root string) (ctrl.Options, error) {
	inTree, err := buildconfig.TreeSelector(root)
	if err != nil {
		return ctrl.Options{}, fmt.Errorf("root namespace %q: %w", root, err)
	}
	tree := &tree{inTree: inTree}
	return ctrl.Options{
		Scheme:    cfscheme.New(),
		NewClient: metrics.NewCountingClient,
		NewCache:  tree.newCache,
		Cache:     cacheOptions(tree),
	}, nil
}

// Leader election: the lease and the events about it, in the manager's own namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=cf-hnc-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=cf-hnc-system,resources=events,verbs=create;patch

// Setup registers every reconciler, the webhooks and the health checks.
func Setup(mgr ctrl.Manager, cfg Config) error {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	c := mgr.GetClient()
	discovery := buildconfig.NewDiscovery(c, mgr.GetAPIReader())
	if err := orgspace.NewOrgReconciler(c, mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-org"), cfg.RootNamespace).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := orgspace.NewSpaceReconciler(c, mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-space"), cfg.RootNamespace, discovery, cfg.Concurrency).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := propagation.SetupWithManager(mgr, cfg.RootNamespace); err != nil {
		return err
	}
	if err := builders.NewDefaultBuilderReconciler(c, mgr.GetAPIReader(), cfg.RootNamespace, cfg.BuilderNamespace).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := staging.NewBuildReconciler(c, mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-build"), staging.RegistryDropletReader{}, cfg.Concurrency).WithLimits(cfg.BuildLimits).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := upgrades.NewRebuildReconciler(c, mgr.GetEventRecorder("cf-hnc-rebuild")).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := upgrades.NewDropletReconciler(c, mgr.GetEventRecorder("cf-hnc-app"), cfg.RootNamespace).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := rollout.NewRolloutReconciler(c, cfg.MaxConcurrentRebuilds).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := processes.NewWebProcessReconciler(c).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := processes.NewProcessReconciler(c, mgr.GetEventRecorder("cf-hnc-process")).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if !cfg.Webhooks {
		return mgr.AddReadyzCheck("ping", healthz.Ping)
	}
	if err := orgspace.SetupWebhooks(mgr, cfg.RootNamespace, admissionDeadline); err != nil {
		return err
	}
	if err := staging.SetupWebhooks(mgr, admissionDeadline); err != nil {
		return err
	}
	if err := rollout.SetupWebhook(mgr); err != nil {
		return err
	}
	if cfg.CertRotation != nil {
		certificates, err := cfg.CertRotation.setup(mgr)
		if err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("certificates", certificates); err != nil {
			return err
		}
	}
	// The webhook server answers TLS only with a certificate: with rotation, once it is mounted.
	return mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker())
}
