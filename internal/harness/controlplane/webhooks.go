package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// prepareWebhooks takes the webhook configurations that the kustomization in configDir builds,
// as a release would, prefixes their names with prefix, and allocates a loopback port and serving
// certificates for the server that will serve them. Install them once that server is up.
func prepareWebhooks(configDir, kustomization, prefix string) (*envtest.WebhookInstallOptions, error) {
	objs, err := install.Build(configDir, kustomization, "")
	if err != nil {
		return nil, err
	}
	opts := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	for _, obj := range objs {
		obj.SetName(prefix + obj.GetName())
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			hook := &admissionv1.MutatingWebhookConfiguration{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, hook)
			opts.MutatingWebhooks = append(opts.MutatingWebhooks, hook)
		case "ValidatingWebhookConfiguration":
			hook := &admissionv1.ValidatingWebhookConfiguration{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, hook)
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, hook)
		}
		if err != nil {
			return nil, fmt.Errorf("%s of %s: %w", obj.GetName(), filepath.Join(configDir, kustomization), err)
		}
	}
	if err := opts.PrepWithoutInstalling(); err != nil {
		return nil, err
	}
	return opts, nil
}

// prepareCFHNCWebhooks prepares cf-hnc's webhook configurations, named as config/default names
// them; RegisterWebhooks registers them with the apiserver once a server listens.
func (cp *ControlPlane) prepareCFHNCWebhooks(context.Context) error {
	opts, err := prepareWebhooks(cp.paths.config(), "webhook", "")
	if err != nil {
		return err
	}
	cp.webhooks = opts
	return nil
}

// RegisterWebhooks registers cf-hnc's webhook configurations with the apiserver. Call it once
// a webhook server listens on Webhooks(): the configurations fail closed.
func (cp *ControlPlane) RegisterWebhooks() error {
	return cp.webhooks.Install(cp.Config)
}

// certDirIn links dir/k8s-webhook-server/serving-certs to certDir: controller-runtime 0.11 (HNC)
// reads its serving certificates from there below TMPDIR.
func certDirIn(dir, certDir string) error {
	link := filepath.Join(dir, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	_ = os.Remove(link)
	return os.Symlink(certDir, link)
}
