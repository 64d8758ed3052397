package rollout

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The apiserver calls the webhook only for kpack's rebuild pods in CF spaces (the match
// condition reads the reason that kpack copies from the Build); it fails open, so that
// rebuilds run unpaced rather than not at all while the manager is down.
// +kubebuilder:webhook:path=/mutate-rebuild-pods,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mrebuildpod.workloads.cloudfoundry.org,admissionReviewVersions=v1,timeoutSeconds=5,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"workloads.cloudfoundry.org/space-guid","operator":"Exists"}]},"matchConditions":[{"name":"kpack-rebuilds","expression":"has(object.metadata.labels) && 'kpack.io/build' in object.metadata.labels && has(object.metadata.annotations) && 'image.kpack.io/reason' in object.metadata.annotations && object.metadata.annotations['image.kpack.io/reason'].split(',').all(r, r in ['STACK', 'BUILDPACK', 'LIFECYCLE'])"}]}`

// SetupWebhook registers the webhook that gates kpack's rebuild pods.
func SetupWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).
		WithDefaulter(rebuildPodGater{}).
		WithDefaulterCustomPath("/mutate-rebuild-pods").
		Complete()
}

// rebuildPodGater puts the rollout gate on rebuild pods.
type rebuildPodGater struct{}

var _ admission.Defaulter[*corev1.Pod] = rebuildPodGater{}

// Default gates a rebuild pod that a kpack Build controls, which the rollout will let run; it
// leaves every other pod as it is.
func (rebuildPodGater) Default(_ context.Context, pod *corev1.Pod) error {
	gate(pod)
	return nil
}
