package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// prepareWebhooks takes the webhook configurations among docs, prefixes their names (HNC's and
// controller-gen's default names collide) and allocates a loopback port and serving certificates
// for the server that will serve them. Install them once that server is up.
func prepareWebhooks(prefix, source string, docs [][]byte) (*envtest.WebhookInstallOptions, error) {
	opts := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	for _, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			hook := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, hook); err != nil {
				return nil, fmt.Errorf("%s: %w", source, err)
			}
			hook.Name = prefix + hook.Name
			opts.MutatingWebhooks = append(opts.MutatingWebhooks, hook)
		case "ValidatingWebhookConfiguration":
			hook := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, hook); err != nil {
				return nil, fmt.Errorf("%s: %w", source, err)
			}
			hook.Name = prefix + hook.Name
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, hook)
		}
	}
	if err := opts.PrepWithoutInstalling(); err != nil {
		return nil, err
	}
	return opts, nil
}

// prepareCFHNCWebhooks prepares cf-hnc's webhook configurations; RegisterWebhooks registers
// them with the apiserver once a server listens.
func (cp *ControlPlane) prepareCFHNCWebhooks(context.Context) error {
	file := cp.paths.config("webhook", "manifests.yaml")
	docs, err := readYAMLDocuments(file)
	if err != nil {
		return err
	}
	opts, err := prepareWebhooks("cf-hnc-", file, docs)
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
