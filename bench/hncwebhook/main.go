// Command hncwebhook measures what HNC's object webhook adds to writes in a space, and what it
// refuses while HNC is down: pod and Secret create calls in an HNC subnamespace two levels below
// the root (where a space is), with the object webhook as HNC v1.1.0 ships it (every namespaced
// kind), as config/hnc narrows it (the kinds HNC propagates), and without it. The three
// alternate in rounds on one control plane: kube-apiserver and etcd, kube-controller-manager and
// HNC with the flags of config/hnc. No node runs, so the pods stay Pending. It prints a Markdown
// section for docs/benchmarks.md.
//
//	go run ./bench/hncwebhook -creates 300
//
// Run it alone: it starts a control plane (under the e2e lock when others share the machine).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

const (
	workDir = ".local/bench-hncwebhook"
	// hncWebhooks is HNC's validating webhook configuration as the control plane registers it.
	hncWebhooks = "hnc-validating-webhook-configuration"
	// objectWebhook is HNC's webhook for objects in the namespaces it manages, and objectPath
	// the path it serves, by which HNC's metrics count its calls.
	objectWebhook = "objects.hnc.x-k8s.io"
	objectPath    = "/validate-objects"
	// shippedRules is HNC's own patch of the object webhook's rules, in HNC's module.
	shippedRules = "config/webhook/webhook_patch.yaml"
	// benchLabel marks what the bench creates in the measured space, so that it can clean up.
	benchLabel = "cf-hnc.bench/hncwebhook"
)

type config struct {
	creates, rounds, loadSpaces int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.creates, "creates", 300, "Pods and Secrets created one at a time in the measured space for each way of running the webhook, while HNC is quiet and again while it is busy.")
	flag.IntVar(&cfg.rounds, "rounds", 6, "Rounds the creates are split into; the ways of running the webhook take turns in each.")
	flag.IntVar(&cfg.loadSpaces, "load-spaces", 100, "Spaces of the org whose Secret HNC copies again and again while it is busy.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false)))
	command := strings.Join(append([]string{"go run ./bench/hncwebhook"}, os.Args[1:]...), " ")
	if err := run(ctx, cfg, command); err != nil {
		fmt.Fprintln(os.Stderr, "hncwebhook:", err)
		os.Exit(1)
	}
}

// mode is one way of running HNC's object webhook.
type mode struct {
	name string
	// rules are the object webhook's rules; nil: no object webhook.
	rules []admissionv1.RuleWithOperations
	// pods and secrets say whether HNC is called for a pod and for a Secret created in a space.
	pods, secrets bool
}

func run(ctx context.Context, cfg config, command string) error {
	say("starting the local control plane (logs in " + workDir + "/logs)")
	cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: workDir, ControllerManager: true, HNC: true})
	if err != nil {
		return err
	}
	defer cp.Stop()
	hncMetrics, err := cp.HNCMetrics(ctx)
	if err != nil {
		return err
	}
	m := &measure{cp: cp, k8s: cp.Client, metricsURL: "http://" + hncMetrics + "/metrics"}
	modes, err := m.readModes(ctx)
	if err != nil {
		return err
	}
	space, err := m.subnamespaceBelowRoot(ctx, "measured")
	if err != nil {
		return err
	}
	r := &results{command: command, cfg: cfg, modes: modes, quiet: map[string]*creates{}, busy: map[string]*creates{}, outage: map[string]outcome{}}
	if err := m.rounds(ctx, space, cfg, "quiet", r.quiet); err != nil {
		return err
	}
	say(fmt.Sprintf("making an org of %d spaces and keeping HNC busy copying its Secret", cfg.loadSpaces))
	if m.load, err = m.startLoad(ctx, cfg.loadSpaces); err != nil {
		return err
	}
	if err := m.rounds(ctx, space, cfg, "busy", r.busy); err != nil {
		return err
	}
	if r.loadUpdates, err = m.load.stop(); err != nil {
		return err
	}
	m.load = nil
	for _, md := range modes {
		say("stopping HNC, the webhook " + md.name)
		if err := m.use(ctx, space, md); err != nil {
			return err
		}
		if r.outage[md.name], err = m.createWhileHNCIsDown(ctx, space); err != nil {
			return err
		}
	}
	fmt.Print(r.markdown())
	return nil
}

// rounds creates pods and Secrets in space in rounds, in each of which every mode takes its
// turn, and records them by mode into into.
func (m *measure) rounds(ctx context.Context, space string, cfg config, what string, into map[string]*creates) error {
	for round := range cfg.rounds {
		say(fmt.Sprintf("%s round %d of %d", what, round+1, cfg.rounds))
		for _, md := range m.modes {
			if into[md.name] == nil {
				into[md.name] = &creates{}
			}
			if err := m.use(ctx, space, md); err != nil {
				return err
			}
			if err := m.createEach(ctx, space, cfg.creates/cfg.rounds, into[md.name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// measure is one run on one control plane.
type measure struct {
	cp         *controlplane.ControlPlane
	k8s        client.Client
	metricsURL string
	// registered is the object webhook as the control plane registered it, whose rules each
	// mode replaces.
	registered admissionv1.ValidatingWebhook
	modes      []mode
	// load keeps HNC busy, when not nil.
	load *load
}

// readModes are HNC's object webhook as HNC ships it, as config/hnc narrows it (what the control
// plane registered), and absent. It keeps the registered webhook for use.
func (m *measure) readModes(ctx context.Context) ([]mode, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/hierarchical-namespaces").Output()
	if err != nil {
		return nil, fmt.Errorf("finding HNC's module: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), shippedRules))
	if err != nil {
		return nil, err
	}
	shipped := &admissionv1.ValidatingWebhookConfiguration{}
	if err := yaml.Unmarshal(data, shipped); err != nil || len(shipped.Webhooks) != 1 || shipped.Webhooks[0].Name != objectWebhook {
		return nil, fmt.Errorf("%s: not HNC's patch of its object webhook: %v", shippedRules, err)
	}
	registered, err := m.objectWebhook(ctx)
	if err != nil {
		return nil, err
	}
	m.registered = registered
	m.modes = []mode{
		{name: "as HNC ships it (every namespaced kind)", rules: shipped.Webhooks[0].Rules, pods: true, secrets: true},
		{name: "as config/hnc narrows it (the kinds HNC propagates)", rules: registered.Rules, secrets: true},
		{name: "absent"},
	}
	return m.modes, nil
}

func (m *measure) objectWebhook(ctx context.Context) (admissionv1.ValidatingWebhook, error) {
	config := &admissionv1.ValidatingWebhookConfiguration{}
	if err := m.k8s.Get(ctx, client.ObjectKey{Name: hncWebhooks}, config); err != nil {
		return admissionv1.ValidatingWebhook{}, err
	}
	for _, hook := range config.Webhooks {
		if hook.Name == objectWebhook {
			return hook, nil
		}
	}
	return admissionv1.ValidatingWebhook{}, fmt.Errorf("%s has no webhook %s", hncWebhooks, objectWebhook)
}

// subnamespaceBelowRoot makes an org-like subnamespace of the root and a space-like one below
// it, and returns the space's name once the default ServiceAccount that pods need is there.
func (m *measure) subnamespaceBelowRoot(ctx context.Context, name string) (string, error) {
	org, err := m.subnamespace(ctx, controlplane.RootNamespace, name+"-org")
	if err != nil {
		return "", err
	}
	space, err := m.subnamespace(ctx, org, name+"-space")
	if err != nil {
		return "", err
	}
	return space, poll(ctx, time.Minute, func() bool {
		return m.k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "default"}, &corev1.ServiceAccount{}) == nil
	})
}

// subnamespace creates an anchor in parent and waits until HNC has made its namespace and put
// it in the tree.
func (m *measure) subnamespace(ctx context.Context, parent, name string) (string, error) {
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: name}}
	if err := m.k8s.Create(ctx, anchor); err != nil {
		return "", err
	}
	return name, poll(ctx, time.Minute, func() bool {
		ns := &corev1.Namespace{}
		return m.k8s.Get(ctx, client.ObjectKey{Name: name}, ns) == nil &&
			ns.Labels[parent+hncv1alpha2.LabelTreeDepthSuffix] == "1"
	})
}

// use sets the object webhook's rules to md's, and waits until the apiserver calls HNC as md
// says: three probes in a row, each a pod and a Secret created in space. A load pauses
// meanwhile, and HNC finishes its copies first: HNC's own writes call the webhook too.
func (m *measure) use(ctx context.Context, space string, md mode) error {
	if m.load != nil {
		m.load.mu.Lock()
		defer m.load.mu.Unlock()
		if err := m.hncIdle(ctx); err != nil {
			return err
		}
	}
	config := &admissionv1.ValidatingWebhookConfiguration{}
	if err := m.k8s.Get(ctx, client.ObjectKey{Name: hncWebhooks}, config); err != nil {
		return err
	}
	var hooks []admissionv1.ValidatingWebhook
	for _, hook := range config.Webhooks {
		if hook.Name != objectWebhook {
			hooks = append(hooks, hook)
		}
	}
	if md.rules != nil {
		hook := *m.registered.DeepCopy()
		hook.Rules = md.rules
		hooks = append(hooks, hook)
	}
	config.Webhooks = hooks
	if err := m.k8s.Update(ctx, config); err != nil {
		return err
	}
	inARow := 0
	return poll(ctx, time.Minute, func() bool {
		pods, secrets, err := m.probe(ctx, space)
		if err != nil || pods != md.pods || secrets != md.secrets {
			inARow = 0
			return false
		}
		inARow++
		return inARow == 3
	})
}

// probe creates a pod and a Secret in space and says whether HNC's object webhook was called
// for each, by HNC's count of its calls.
func (m *measure) probe(ctx context.Context, space string) (pod, secret bool, err error) {
	before, err := m.objectCalls(ctx)
	if err != nil {
		return false, false, err
	}
	if err := m.k8s.Create(ctx, newPod(space)); err != nil {
		return false, false, err
	}
	afterPod, err := m.objectCalls(ctx)
	if err != nil {
		return false, false, err
	}
	if err := m.k8s.Create(ctx, newSecret(space)); err != nil {
		return false, false, err
	}
	afterSecret, err := m.objectCalls(ctx)
	if err != nil {
		return false, false, err
	}
	return afterPod > before, afterSecret > afterPod, m.cleanUp(ctx, space)
}

// objectCalls is how many calls HNC's object webhook has answered.
func (m *measure) objectCalls(ctx context.Context) (float64, error) {
	families, err := metrics.ScrapeURL(ctx, http.DefaultClient, m.metricsURL, nil)
	if err != nil {
		return 0, err
	}
	total := 0.0
	if f := families["controller_runtime_webhook_requests_total"]; f != nil {
		for _, metric := range f.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "webhook" && label.GetValue() == objectPath {
					total += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return total, nil
}

// createEach creates n pods and n Secrets in space, one at a time and alternately, and records
// each call's duration.
func (m *measure) createEach(ctx context.Context, space string, n int, into *creates) error {
	for range n {
		if err := into.timePod(ctx, m.k8s, space); err != nil {
			return err
		}
		if err := into.timeSecret(ctx, m.k8s, space); err != nil {
			return err
		}
	}
	return m.cleanUp(ctx, space)
}

// createWhileHNCIsDown stops HNC, tries to create a pod and a Secret in space, and starts HNC
// again.
func (m *measure) createWhileHNCIsDown(ctx context.Context, space string) (outcome, error) {
	if err := m.cp.StopComponent(ctx, "hnc-manager"); err != nil {
		return outcome{}, err
	}
	pod := m.k8s.Create(ctx, newPod(space))
	secret := m.k8s.Create(ctx, newSecret(space))
	if err := m.cp.StartComponent(ctx, "hnc-manager"); err != nil {
		return outcome{}, err
	}
	// HNC's webhook answers again: clean up what got through.
	return outcome{pod: pod, secret: secret}, poll(ctx, time.Minute, func() bool { return m.cleanUp(ctx, space) == nil })
}

func (m *measure) cleanUp(ctx context.Context, space string) error {
	return errors.Join(
		m.k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(space), client.HasLabels{benchLabel}, client.GracePeriodSeconds(0)),
		m.k8s.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(space), client.HasLabels{benchLabel}))
}

func newPod(space string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, GenerateName: "instance-", Labels: map[string]string{benchLabel: "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:latest"}}},
	}
}

func newSecret(space string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, GenerateName: "binding-", Labels: map[string]string{benchLabel: "true"}},
		StringData: map[string]string{"password": "secret"},
	}
}

// poll calls done every 20 ms until it returns true.
func poll(ctx context.Context, timeout time.Duration, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return done(), nil
	})
}

func say(msg string) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), msg)
}
