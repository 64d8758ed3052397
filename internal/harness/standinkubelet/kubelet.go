package standinkubelet

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// concurrentPods bounds how many pods are completed at once.
	concurrentPods = 2
	// podTimeout bounds the registry work for one pod.
	podTimeout = 2 * time.Minute
	// minBuildDuration is how long a pod runs at least. kpack orders an Image's Builds by their
	// creation timestamps, which have whole seconds, and with a tie may take an older Build for
	// the latest and then fail forever to create the next one ("already exists"). kpack creates
	// an Image's next Build only after the last one finished, so a pod that finishes in a later
	// second than it was created in keeps every Build of an Image in a second of its own.
	// Real builds take minutes.
	minBuildDuration = time.Second
	// imagePullBackoff is how long a pod whose builder image cannot be pulled waits before the
	// next attempt; a kubelet backs off up to 5 minutes, which is too slow for tests.
	imagePullBackoff = 10 * time.Second
)

// Kubelet is the stand-in kubelet: it completes the pods that kpack creates for Builds. Create
// it with New, start it with Run.
type Kubelet struct {
	manager  manager.Manager
	failures *failures
}

// Options configure a Kubelet.
type Options struct {
	// Logger receives the Kubelet's logs. The zero value uses controller-runtime's global logger.
	Logger logr.Logger
}

// New creates a stand-in kubelet for the apiserver of cfg. It watches only pods labelled by
// kpack for a Build, and reads Secrets directly rather than caching them.
func New(cfg *rest.Config, opts Options) (*Kubelet, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = loopbackDialer.DialContext

	hasBuild, err := labels.NewRequirement(kpackv1alpha2.BuildLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Logger:  opts.Logger,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasBuild)},
		}},
	})
	if err != nil {
		return nil, err
	}

	k := &Kubelet{manager: mgr, failures: &failures{}}
	r := &podReconciler{
		client:  mgr.GetClient(),
		secrets: mgr.GetAPIReader(),
		steps:   steps{registry: newRegistry(), failures: k.failures},
	}
	// A kubelet acts on a pod once, when it is scheduled: when it appears without scheduling
	// gates, or when its last gate goes; restarts see every pod appear again. Retries come from
	// errors and RequeueAfter, not from status updates.
	created := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return needsKubelet(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok := e.ObjectOld.(*corev1.Pod)
			return ok && !isScheduled(old) && needsKubelet(e.ObjectNew)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	skipNameValidation := true // tests run several stand-ins, one after the other, in one process
	err = ctrl.NewControllerManagedBy(mgr).
		Named("standin-kubelet").
		For(&corev1.Pod{}, builder.WithPredicates(created)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentPods, SkipNameValidation: &skipNameValidation}).
		Complete(r)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Run completes build pods until ctx is done. A Kubelet runs once.
func (k *Kubelet) Run(ctx context.Context) error {
	return k.manager.Start(ctx)
}

// FailBuilds makes the builds of the kpack Image image fail the way a failing lifecycle step
// does, for every pod the Kubelet completes from now on until the returned function is called:
// a build pod's build step, or a rebase pod's rebase step, exits non-zero with message as its
// termination message, which kpack copies into the Build's Succeeded condition. The image
// already pushed stays the Image's latest image. A later call that matches the same pods takes
// precedence over an earlier one.
func (k *Kubelet) FailBuilds(image types.NamespacedName, message string) (restore func()) {
	return k.FailBuildsMatching(image.Namespace, labels.SelectorFromSet(labels.Set{kpackv1alpha2.ImageLabel: image.Name}), message)
}

// FailBuildsMatching is FailBuilds for the build pods in namespace whose labels match
// selector: also those of Builds without an Image, whose pods carry the Build's labels.
func (k *Kubelet) FailBuildsMatching(namespace string, selector labels.Selector, message string) (restore func()) {
	return k.failures.add(&failure{namespace: namespace, selector: selector, message: message})
}

// failures are the injected build failures, the latest last.
type failures struct {
	mu   sync.Mutex
	list []*failure
}

type failure struct {
	namespace string
	selector  labels.Selector
	message   string
}

func (f *failures) add(added *failure) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, added)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.list = slices.DeleteFunc(f.list, func(x *failure) bool { return x == added })
	}
}

// of returns the message of the latest failure that matches a pod.
func (f *failures) of(namespace string, podLabels labels.Set) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.list) - 1; i >= 0; i-- {
		if x := f.list[i]; x.namespace == namespace && x.selector.Matches(podLabels) {
			return x.message, true
		}
	}
	return "", false
}

// podReconciler completes one build pod per Reconcile.
type podReconciler struct {
	client  client.Client
	secrets client.Reader
	steps   steps
}

// Reconcile reads the pod, does its containers' work, and reports how they ended in the pod's
// status, as a kubelet would.
func (r *podReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !needsKubelet(pod) {
		return reconcile.Result{}, nil
	}
	if wait := time.Until(pod.CreationTimestamp.Add(minBuildDuration)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	p, err := planFor(pod)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	creds, err := loadCredentials(ctx, r.secrets, pod.Namespace, p.secrets)
	if err != nil {
		return reconcile.Result{}, err
	}

	work, cancel := context.WithTimeout(ctx, podTimeout)
	defer cancel()
	var o outcome
	if p.kind == rebasePod {
		o = r.steps.rebase(work, p, creds)
	} else {
		o = r.steps.build(work, p, creds)
	}

	if ctx.Err() != nil {
		// Stopping: the pod is redone after a restart rather than failed for being interrupted.
		return reconcile.Result{}, ctx.Err()
	}
	if o.pending() && waitsAlready(pod, o) {
		return reconcile.Result{RequeueAfter: imagePullBackoff}, nil
	}
	pod.Status = podStatus(pod, o, metav1.Now())
	if err := r.client.Status().Update(ctx, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	log.Info("Reported the build pod's status", "phase", pod.Status.Phase, "stoppedAt", o.stoppedAt, "message", o.message)
	if o.pending() {
		return reconcile.Result{RequeueAfter: imagePullBackoff}, nil
	}
	return reconcile.Result{}, nil
}

// needsKubelet reports whether an object is a scheduled kpack build pod that has not finished.
func needsKubelet(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && isBuildPod(pod) && isScheduled(pod) && !isDone(pod)
}
