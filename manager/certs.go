package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The rotator keeps its CA and the serving certificate in a Secret of the manager's namespace
// and injects the CA into the webhook configurations; the Secret is mounted as the certificate
// directory. The names are those of config/default.
// +kubebuilder:rbac:groups="",namespace=cf-hnc-system,resources=secrets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=cf-hnc-validating-webhook-configuration,verbs=update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=cf-hnc-mutating-webhook-configuration,verbs=update

// CertRotation makes the webhook serving certificate in the cluster, with
// open-policy-agent/cert-controller (as HNC does): no cert-manager and no manual step.
type CertRotation struct {
	// Namespace is the manager's namespace: the Secret and the webhook Service are in it.
	Namespace string
	// Secret holds the CA and the serving certificate; it must exist (config/default ships it
	// empty), and be mounted at CertDir.
	Secret string
	// Service is the webhook Service: the certificate is for <Service>.<Namespace>.svc.
	Service string
	// ValidatingWebhookConfiguration and MutatingWebhookConfiguration get the CA.
	ValidatingWebhookConfiguration, MutatingWebhookConfiguration string
	// CertDir is where the Secret is mounted: the webhook server serves tls.crt and tls.key
	// from it once they are there.
	CertDir string
	// ExtraDNSNames are further names in the certificate, for an apiserver that reaches the
	// webhook server by another name than the Service's (the local control plane: localhost).
	ExtraDNSNames []string

	certs  servingCertificates
	issued chan struct{}
}

// DNSName is the name that the apiserver verifies the webhook server's certificate against
// when it calls the Service.
func (r *CertRotation) DNSName() string { return fmt.Sprintf("%s.%s.svc", r.Service, r.Namespace) }

// WebhookOptions makes the webhook server take its certificate from the rotated files once
// they exist. Without this the server reads them when it starts, before the rotator has
// written the Secret and the kubelet has mounted it, and the manager exits.
func (r *CertRotation) WebhookOptions(opts webhook.Options) webhook.Options {
	r.certs.dir = r.CertDir
	opts.CertDir = r.CertDir
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = r.certs.GetCertificate })
	return opts
}

// setup adds the rotator and the certificate watcher to the manager and returns the readiness
// check: ready once the certificate is in the directory and the CA in the webhook configuration.
// The rotator runs in every replica, not only in the leader: every replica serves the webhooks.
// Replicas that race for the empty Secret conflict; the loser reads the winner's certificate.
func (r *CertRotation) setup(mgr ctrl.Manager) (healthz.Checker, error) {
	if r.certs.dir == "" {
		return nil, errors.New("cert rotation: the webhook server was not made with CertRotation.WebhookOptions")
	}
	r.issued = make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: r.Namespace, Name: r.Secret},
		CertDir:        r.CertDir,
		CAName:         "cf-hnc-ca",
		CAOrganization: "cf-hnc",
		DNSName:        r.DNSName(),
		ExtraDNSNames:  r.ExtraDNSNames,
		IsReady:        r.issued,
		Webhooks: []rotator.WebhookInfo{
			{Name: r.ValidatingWebhookConfiguration, Type: rotator.Validating},
			{Name: r.MutatingWebhookConfiguration, Type: rotator.Mutating},
		},
		RequireLeaderElection: false,
		FieldOwner:            "cf-hnc-cert-rotator",
	})
	if err != nil {
		return nil, fmt.Errorf("cert rotation: %w", err)
	}
	if err := mgr.Add(&r.certs); err != nil {
		return nil, err
	}
	return func(*http.Request) error {
		select {
		case <-r.issued:
			return nil
		default:
			return fmt.Errorf("the webhook certificate is not in %s, or its CA not in %s and %s, yet",
				r.CertDir, r.ValidatingWebhookConfiguration, r.MutatingWebhookConfiguration)
		}
	}, nil
}

// servingCertificates serves the certificate files of a directory from the moment they appear,
// and follows their changes (a renewed certificate) from then on.
type servingCertificates struct {
	dir     string
	watcher atomic.Pointer[certwatcher.CertWatcher]
}

var _ manager.LeaderElectionRunnable = (*servingCertificates)(nil)

// GetCertificate fails the TLS handshake until the files exist.
func (s *servingCertificates) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w := s.watcher.Load()
	if w == nil {
		return nil, fmt.Errorf("no webhook certificate in %s yet", s.dir)
	}
	return w.GetCertificate(hello)
}

// Start waits for tls.crt and tls.key, then watches them until ctx ends.
func (s *servingCertificates) Start(ctx context.Context) error {
	cert, key := filepath.Join(s.dir, "tls.crt"), filepath.Join(s.dir, "tls.key")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !exists(cert) || !exists(key) {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	w, err := certwatcher.New(cert, key)
	if err != nil {
		return err
	}
	s.watcher.Store(w)
	ctrl.Log.WithName("cert-rotation").Info("serving the webhook certificate", "dir", s.dir)
	return w.Start(ctx)
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (s *servingCertificates) NeedLeaderElection() bool { return false }

func exists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Size() > 0
}
