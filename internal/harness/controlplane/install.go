package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The cf-hnc manager runs here as it runs in a cluster: config/default is built and
// server-side applied whole (CRDs, namespace, ServiceAccount, RBAC, Deployment, Services,
// webhook configuration, certificate Secret, policies, HNC's configuration, the root
// namespace), and the manager binary runs with the args of the Deployment's container, as the
// Deployment's ServiceAccount. Only what cannot be the same out of a cluster differs, and is
// listed in outOfClusterFlags and localWebhooks:
//
//   - there is no kubelet to run the Deployment's pods: the binary runs as a process, with a
//     kubeconfig that impersonates the ServiceAccount (and its groups) from the admin's
//     credentials, so RBAC and the ValidatingAdmissionPolicies see the deployed identity;
//   - its servers listen on free loopback ports, not on the pod's;
//   - the apiserver cannot reach a Service (no kube-proxy, no cluster DNS): the webhook
//     configuration is applied with clientConfig.url https://localhost:<port><path> instead of
//     clientConfig.service, and the rotated certificate also names localhost
//     (--cert-extra-dns-names);
//   - there is no kubelet to mount the certificate Secret: the control plane copies the
//     Secret's keys into the certificate directory as a secret volume would (secretvolume.go).
//
// So the certificate rotation runs for real here: the manager fills the Secret (through its
// RBAC and the policy exception of config/default), injects the CA into the applied webhook
// configuration, waits for the mounted files, and the apiserver verifies the webhook server's
// certificate with that CA. Not exercised here: the Service, the certificate's Service DNS
// name, two replicas racing for the Secret and the lease, the probes as the kubelet calls
// them, the image.

// deployment is what the local control plane deployed of config/default.
type deployment struct {
	objects    []*unstructured.Unstructured
	args       []string // the Deployment's container args
	kubeconfig string   // impersonates the Deployment's ServiceAccount
	webhookURL string   // https://localhost:<port>, where the webhook configuration points
	port       int
	certDir    string
}

// Deploy builds config/default and applies it, pointing its webhooks at a local port; Start
// does it when Options.Manager is set. Calling it again applies config/default again, as an
// upgrade (or a new install after an uninstall) does; StartManager then runs the manager of
// that deployment.
func (cp *ControlPlane) Deploy(ctx context.Context) error {
	objs, err := install.Build(cp.paths.config(), install.Default, "")
	if err != nil {
		return err
	}
	container, err := install.ManagerContainerOf(objs)
	if err != nil {
		return err
	}
	d := &deployment{
		objects: objs,
		args:    container.Args,
		certDir: filepath.Join(cp.paths.workDir, "cf-hnc-webhook-certs"),
	}
	// Again, the manager that may be running keeps its port.
	if cp.deployed != nil {
		d.port = cp.deployed.port
	} else {
		webhookAddr, _, err := freeLoopbackAddrs()
		if err != nil {
			return err
		}
		d.port = port(webhookAddr)
	}
	d.webhookURL = "https://localhost:" + strconv.Itoa(d.port)
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		if kind := obj.GetKind(); kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration" {
			if obj, err = localWebhooks(obj, d.webhookURL); err != nil {
				return err
			}
		}
		applied = append(applied, obj)
	}
	if err := install.Apply(ctx, cp.Client, applied); err != nil {
		return fmt.Errorf("applying config/default: %w", err)
	}
	if d.kubeconfig, err = cp.serviceAccountKubeconfig(install.Namespace, install.ServiceAccount); err != nil {
		return err
	}
	cp.deployed = d
	return nil
}

// localWebhooks points every webhook of a configuration at url plus the path of its Service
// reference, since the apiserver cannot reach the Service here. The CA stays the rotator's.
func localWebhooks(config *unstructured.Unstructured, url string) (*unstructured.Unstructured, error) {
	config = config.DeepCopy()
	hooks, _, err := unstructured.NestedSlice(config.Object, "webhooks")
	if err != nil {
		return nil, err
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: webhook %d is not an object", config.GetName(), i)
		}
		path, found, err := unstructured.NestedString(hook, "clientConfig", "service", "path")
		if err != nil || !found {
			return nil, fmt.Errorf("%s: webhook %v has no clientConfig.service.path (%v)", config.GetName(), hook["name"], err)
		}
		unstructured.RemoveNestedField(hook, "clientConfig", "service")
		if err := unstructured.SetNestedField(hook, url+path, "clientConfig", "url"); err != nil {
			return nil, err
		}
		hooks[i] = hook
	}
	return config, unstructured.SetNestedSlice(config.Object, hooks, "webhooks")
}

// serviceAccountKubeconfig writes a kubeconfig with the admin's credentials that impersonates
// a ServiceAccount with the groups a token of it would carry.
func (cp *ControlPlane) serviceAccountKubeconfig(namespace, name string) (string, error) {
	config, err := clientcmd.Load(cp.env.KubeConfig)
	if err != nil {
		return "", err
	}
	for _, user := range config.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + namespace + ":" + name
		user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	path := filepath.Join(cp.paths.workDir, "kubeconfig-"+namespace+"-"+name)
	return path, clientcmd.WriteToFile(*config, path)
}

// applyKustomization builds config/<name> and applies it.
func (cp *ControlPlane) applyKustomization(ctx context.Context, name string) error {
	objs, err := install.Build(cp.paths.config(), name, "")
	if err != nil {
		return err
	}
	return install.Apply(ctx, cp.Client, objs)
}
