package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// startHNC runs HNC with its webhooks and config/hnc's flags and configuration: with a node, as
// its release's Deployment (installHNC); without, the HNC manager binary as a host process.
func (cp *ControlPlane) startHNC(ctx context.Context) error {
	if cp.opts.Node {
		return cp.installHNC(ctx)
	}
	return cp.startHNCProcess(ctx)
}

// installHNC publishes HNC's image (hack/tools.sh builds it) and applies HNC's release with
// config/hnc's changes (install.BuildHNC), as docs/install.md has an operator install it; then
// it waits until HNC serves and reports every configured resource.
func (cp *ControlPlane) installHNC(ctx context.Context) error {
	layout, err := cp.paths.binary("hnc-image")
	if err != nil {
		return err
	}
	image, err := cp.kpack.Registry.PublishLayoutImage(ctx, layout, "", "hnc/manager", "v1.1.0-cf-hnc")
	if err != nil {
		return err
	}
	objs, err := cp.paths.hncRelease(image.Pinned())
	if err != nil {
		return err
	}
	if err := cp.applyPlatform(ctx, objs); err != nil {
		return fmt.Errorf("installing HNC: %w", err)
	}
	if err := cp.waitRolledOut(ctx, hncDeployment); err != nil {
		return err
	}
	return cp.waitHNCConfigured(ctx)
}

// startHNCProcess runs the HNC manager with its webhooks as a host process and applies
// config/hnc. HNC writes bypass its own webhooks only for members of
// system:serviceaccounts:hnc-system, so its user is one.
func (cp *ControlPlane) startHNCProcess(ctx context.Context) error {
	binary, err := cp.paths.binary("hnc-manager")
	if err != nil {
		return err
	}
	hncDir, err := cp.paths.moduleDir(hncModule)
	if err != nil {
		return err
	}
	// HNC's release builds its webhooks with kustomize: its patch limits the object webhook to
	// the namespaces HNC labels as included, so that with HNC down nothing in an excluded
	// namespace (cf-hnc's lease and certificates, kpack's) is refused. config/hnc then limits it
	// to the kinds HNC propagates, as an installation does.
	webhooks, err := prepareWebhooks(filepath.Join(hncDir, "config"), "webhook", "hnc-")
	if err != nil {
		return err
	}
	cp.hncWebhooks = webhooks
	if err := cp.paths.patchHNCWebhooks(webhooks); err != nil {
		return err
	}
	tmp := filepath.Join(cp.paths.workDir, "hnc-tmp")
	if err := certDirIn(tmp, webhooks.LocalServingCertDir); err != nil {
		return err
	}
	kubeconfig, err := cp.userKubeconfig("hnc-manager", "system:masters", "system:serviceaccounts:hnc-system")
	if err != nil {
		return err
	}
	metrics, probes, err := freeLoopbackAddrs()
	if err != nil {
		return err
	}
	cp.hncMetrics = metrics
	expected, err := cp.paths.hncArgs()
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--webhook-server-port=" + strconv.Itoa(webhooks.LocalServingPort),
		"--metrics-addr=" + metrics,
		"--health-probe-bind-address=" + probes,
		"--enable-stackdriver=false",
	}, expected...)
	hnc, err := startComponent("hnc-manager", cp.paths.logDir(), binary, args, []string{"TMPDIR=" + tmp})
	if err != nil {
		return err
	}
	cp.track(hnc)
	ready := cp.readyWhen(hnc.name, httpOK("http://"+probes+"/readyz"))
	if err := hnc.waitUntil(ctx, 2*time.Minute, "ready", ready); err != nil {
		return err
	}
	if err := webhooks.Install(cp.Config); err != nil {
		return hnc.failed(fmt.Errorf("webhooks could not be registered: %w", err))
	}
	return cp.configureHNC(ctx, hnc)
}

// patchHNCWebhooks applies config/hnc's patch to the webhook configurations that HNC's release
// builds, as an operator applies it to HNC's installed one (a strategic merge patch: webhooks
// merge by name, and a webhook's rules are replaced).
func (p paths) patchHNCWebhooks(webhooks *envtest.WebhookInstallOptions) error {
	file := p.config("hnc", install.HNCObjectsWebhookPatch)
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	patch, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var target metav1.PartialObjectMetadata
	if err := json.Unmarshal(patch, &target); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for i, hooks := range webhooks.ValidatingWebhooks {
		if hooks.Name != target.Name {
			continue
		}
		original, err := json.Marshal(hooks)
		if err != nil {
			return err
		}
		patched, err := strategicpatch.StrategicMergePatch(original, patch, admissionv1.ValidatingWebhookConfiguration{})
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		result := &admissionv1.ValidatingWebhookConfiguration{}
		if err := json.Unmarshal(patched, result); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		webhooks.ValidatingWebhooks[i] = result
		return nil
	}
	return fmt.Errorf("%s patches %s, which HNC's release does not make", file, target.Name)
}

// HNCMetrics is the address of the HNC manager's metrics endpoint (plain HTTP): its pod's, or
// with no node its process's on loopback.
func (cp *ControlPlane) HNCMetrics(ctx context.Context) (string, error) {
	if cp.platform == nil {
		return cp.hncMetrics, nil
	}
	pods, err := cp.podsOf(ctx, hncDeployment)
	if err != nil {
		return "", err
	}
	for _, pod := range pods {
		if podReady(&pod) && pod.DeletionTimestamp == nil {
			return net.JoinHostPort(pod.Status.PodIP, "8080"), nil
		}
	}
	return "", errors.New("no pod of HNC's manager is ready")
}

// hncInClusterFlags are HNC manager flags of config/hnc that the control plane sets itself or
// leaves out: the addresses, which it binds to loopback, and HNC's management of its own webhook
// certificate, which the control plane provides (startHNC).
var hncInClusterFlags = []string{"--webhook-server-port=", "--metrics-addr=", "--enable-internal-cert-management", "--cert-restart-on-secret-refresh"}

// hncArgs are the HNC manager flags that config/hnc says cf-hnc expects, less hncInClusterFlags.
func (p paths) hncArgs() ([]string, error) {
	file := p.config("hnc", "manager-args.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	deployment := &appsv1.Deployment{}
	if err := yaml.Unmarshal(data, deployment); err != nil || len(deployment.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%s: not a patch of HNC's Deployment with one container: %v", file, err)
	}
	var args []string
	for _, arg := range deployment.Spec.Template.Spec.Containers[0].Args {
		if !slices.ContainsFunc(hncInClusterFlags, func(flag string) bool { return strings.HasPrefix(arg, flag) }) {
			args = append(args, arg)
		}
	}
	return args, nil
}

// configureHNC applies config/hnc and waits until HNC reports every configured resource, so
// that propagation works from the first namespace on.
func (cp *ControlPlane) configureHNC(ctx context.Context, hnc *component) error {
	if err := cp.applyKustomization(ctx, "hnc"); err != nil {
		return err
	}
	return hnc.waitUntil(ctx, time.Minute, "configured", cp.hncConfigured)
}

// waitHNCConfigured waits until HNC's pod reports every resource of its configuration.
func (cp *ControlPlane) waitHNCConfigured(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = cp.hncConfigured(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("HNC is not configured: %v%s", last, cp.describePods(ctx, hncDeployment))
	}
	return nil
}

// hncConfigured checks that HNC reports every resource of its configuration.
func (cp *ControlPlane) hncConfigured(ctx context.Context) error {
	config := &hncv1alpha2.HNCConfiguration{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: hncv1alpha2.HNCConfigSingleton}, config); err != nil {
		return err
	}
	reported := map[string]bool{}
	for _, r := range config.Status.Resources {
		reported[r.Group+"/"+r.Resource] = true
	}
	for _, r := range config.Spec.Resources {
		if !reported[r.Group+"/"+r.Resource] {
			return fmt.Errorf("HNC does not report %s/%s yet", r.Group, r.Resource)
		}
	}
	return nil
}
