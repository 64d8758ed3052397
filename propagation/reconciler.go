// Package propagation gets the build configuration that an operator placed once (in the root
// or an org namespace) into every space below, through HNC.
//
// An operator labels registry credential Secrets and the build ServiceAccount with
// workloads.cloudfoundry.org/build-config=true. The Reconciler marks those in the root and org
// namespaces for HNC, which runs in AllowPropagate mode for these kinds (config/hnc) and copies
// them into every space, and keeps every labelled ServiceAccount listing the credentials that
// win in its namespace, and mounting no API token into kpack's build pods, which run as it.
// It marks nothing in a space, which has nothing below it. Default Builders are not
// propagated: the builders package makes one ClusterBuilder of each.
package propagation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
)

// fieldOwner is the server-side apply field manager of what the Reconciler writes. Applying
// with it states everything it wants on an object: whatever it set before and no longer
// states is removed, which is how a removed label stops propagation.
const fieldOwner = client.FieldOwner("cf-hnc-propagation")

// propagateToAll is the HNC annotation that selects an object for propagation to every
// descendant when its kind is in AllowPropagate mode.
const propagateToAll = hncv1alpha2.AnnotationAllSelector

// managedPullSecretsAnnotation lists the imagePullSecrets entries of a build ServiceAccount
// that cf-hnc added. imagePullSecrets is an atomic list: cf-hnc states it whole, and keeps
// every entry it did not add itself.
const managedPullSecretsAnnotation = "workloads.cloudfoundry.org/managed-image-pull-secrets"

// blockedRecheck is how often an object that HNC refuses to propagate is tried again: what
// blocks it (an object of the same name in a space) is not cached and cannot be watched.
const blockedRecheck = time.Minute

// Reconciler marks build-config objects of one kind for HNC propagation and keeps build-config
// ServiceAccounts listing the credential Secrets that win in their namespace.
type Reconciler struct {
	client    client.Client
	uncached  client.Reader
	recorder  events.EventRecorder
	root      string
	kind      schema.GroupVersionKind
	newObject func() client.Object
}

// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=buildconfigs,verbs=manage

// SetupWithManager registers one reconciler for each kind that HNC propagates: Secrets and
// ServiceAccounts, also for those placed in a namespace when HNC puts it in CF's tree or labels
// it an org's. The manager's cache holds only build-config Secrets and ServiceAccounts;
// uncached reads those that have just lost the label.
func SetupWithManager(mgr ctrl.Manager, root string) error {
	for _, kind := range []struct {
		newObject func() client.Object
		newList   func() client.ObjectList
	}{
		{func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }},
		{func() client.Object { return &corev1.ServiceAccount{} }, func() client.ObjectList { return &corev1.ServiceAccountList{} }},
	} {
		gvk, err := mgr.GetClient().GroupVersionKindFor(kind.newObject())
		if err != nil {
			return err
		}
		r := &Reconciler{client: mgr.GetClient(), uncached: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder("cf-hnc-propagation"),
			root: root, kind: gvk, newObject: kind.newObject}
		b := ctrl.NewControllerManagedBy(mgr).Named("propagation-" + strings.ToLower(gvk.Kind)).For(kind.newObject())
		b = buildconfig.WatchPlacements(b, mgr.GetClient(), root, kind.newList)
		if gvk.Kind == "ServiceAccount" {
			// The winning credentials of a namespace change with its Secrets.
			b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.serviceAccountsInNamespace))
		}
		if err := b.Complete(r); err != nil {
			return err
		}
	}
	return nil
}

// Reconcile states what cf-hnc wants on one object of the Reconciler's kind.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := r.get(ctx, req.NamespacedName)
	if obj == nil || err != nil {
		return reconcile.Result{}, err
	}
	if _, copied := obj.GetLabels()[hncv1alpha2.LabelInheritedFrom]; copied {
		return reconcile.Result{}, nil
	}
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var credentials []string
	if _, ok := obj.(*corev1.ServiceAccount); ok && isBuildConfig(obj) {
		if credentials, err = r.serviceAccountCredentials(ctx, ns); err != nil {
			return reconcile.Result{}, err
		}
	}
	want := r.plan(obj, ns, credentials, "")
	if !r.needsApply(obj, want) {
		return reconcile.Result{}, nil
	}
	err = r.apply(ctx, want)
	refusal := hncRefusal(err)
	if refusal == "" {
		return reconcile.Result{}, err
	}
	// HNC will not propagate the object as it stands: say so on the object, where the spaces
	// that miss it read it, and look again later instead of retrying in a loop.
	blocked := r.plan(obj, ns, credentials, refusal)
	if !r.needsApply(obj, blocked) {
		return reconcile.Result{RequeueAfter: blockedRecheck}, nil
	}
	r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, cfv1alpha1.PropagationBlockedReason, "Propagate",
		"HNC refuses to propagate %s %s: %s", r.kind.Kind, obj.GetName(), refusal)
	return reconcile.Result{RequeueAfter: blockedRecheck}, r.apply(ctx, blocked)
}

// intent is what cf-hnc wants on an object: what it marks and, on a build ServiceAccount, the
// credentials listed and no API token. It is applied whole: what an earlier intent set and
// this one leaves out is withdrawn.
type intent struct {
	obj              *unstructured.Unstructured
	annotations      map[string]string
	secrets          []string
	imagePullSecrets []string
	// noToken sets automountServiceAccountToken false: kpack's build pods run as the build
	// ServiceAccount and never call the apiserver (kpack's controller reads the
	// ServiceAccount's credentials and mounts them into the pod), so a token in them would
	// only hand the build's code, a tenant's, the ServiceAccount's rights. HNC copies the
	// field into every space with the ServiceAccount.
	noToken bool
}

// plan computes the intent for an object: a build-config Secret or ServiceAccount in the root
// or an org namespace is marked for propagation to every space below, unless HNC refused it
// (blocked); a build ServiceAccount lists the winning credentials, beside the operator's own
// pull secrets, and mounts no token; anything else gets nothing.
func (r *Reconciler) plan(obj client.Object, ns *corev1.Namespace, credentials []string, blocked string) intent {
	want := intent{obj: &unstructured.Unstructured{}, annotations: map[string]string{}}
	want.obj.SetGroupVersionKind(r.kind)
	want.obj.SetNamespace(obj.GetNamespace())
	want.obj.SetName(obj.GetName())
	sa, isServiceAccount := obj.(*corev1.ServiceAccount)
	if isServiceAccount {
		// Also without the label: the operator's own pull secrets stay when cf-hnc's go.
		want.imagePullSecrets = withOperatorsPullSecrets(sa, credentials)
	}
	if !isBuildConfig(obj) {
		return want
	}
	if buildconfig.PlacesForSpaces(ns, r.root) {
		if blocked != "" {
			want.annotations[buildconfig.PropagationBlockedAnnotation] = blocked
		} else {
			want.annotations[propagateToAll] = "true"
		}
	}
	if isServiceAccount {
		want.secrets = credentials
		want.annotations[managedPullSecretsAnnotation] = strings.Join(credentials, ",")
		want.noToken = true
	}
	return want
}

// withOperatorsPullSecrets is a build ServiceAccount's imagePullSecrets: the operator's own
// entries, as they are, then the winning credentials. Entries that cf-hnc added before (its
// annotation names them) and that no longer win are dropped.
func withOperatorsPullSecrets(sa *corev1.ServiceAccount, credentials []string) []string {
	added := strings.Split(sa.Annotations[managedPullSecretsAnnotation], ",")
	var list []string
	for _, ref := range sa.ImagePullSecrets {
		if !slices.Contains(added, ref.Name) && !slices.Contains(list, ref.Name) {
			list = append(list, ref.Name)
		}
	}
	for _, name := range credentials {
		if !slices.Contains(list, name) {
			list = append(list, name)
		}
	}
	return list
}

// needsApply says whether the object differs from the intent in anything the intent states, or
// holds something that cf-hnc set before and no longer wants (known from the managed fields).
func (r *Reconciler) needsApply(obj client.Object, want intent) bool {
	annotations := obj.GetAnnotations()
	for key, value := range want.annotations {
		if annotations[key] != value {
			return true
		}
	}
	for _, key := range []string{propagateToAll, buildconfig.PropagationBlockedAnnotation, managedPullSecretsAnnotation} {
		if _, wanted := want.annotations[key]; !wanted && annotations[key] != "" && r.setBefore(obj) {
			return true
		}
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return false
	}
	if want.noToken {
		if mounts := sa.AutomountServiceAccountToken; mounts == nil || *mounts {
			return true
		}
	} else if sa.AutomountServiceAccountToken != nil && r.applied(obj, automountField) {
		return true
	}
	var pull, listed []string
	for _, ref := range sa.ImagePullSecrets {
		pull = append(pull, ref.Name)
	}
	for _, ref := range sa.Secrets {
		listed = append(listed, ref.Name)
	}
	return !slices.Equal(pull, want.imagePullSecrets) || !isSubset(want.secrets, listed)
}

// setBefore says whether cf-hnc has applied anything to the object.
func (r *Reconciler) setBefore(obj client.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), isOwnApply)
}

// automountField is automountServiceAccountToken as managed fields name it.
const automountField = `"f:automountServiceAccountToken"`

// applied says whether cf-hnc's apply holds a top-level field of the object (named as managed
// fields name it), which it then withdraws when it no longer wants it.
func (r *Reconciler) applied(obj client.Object, field string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return isOwnApply(f) && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), field)
	})
}

func isOwnApply(f metav1.ManagedFieldsEntry) bool {
	return f.Manager == string(fieldOwner) && f.Operation == metav1.ManagedFieldsOperationApply
}

func (r *Reconciler) apply(ctx context.Context, want intent) error {
	if len(want.annotations) > 0 {
		want.obj.SetAnnotations(want.annotations)
	}
	if len(want.secrets) > 0 {
		want.obj.Object["secrets"] = references(want.secrets)
	}
	if len(want.imagePullSecrets) > 0 {
		want.obj.Object["imagePullSecrets"] = references(want.imagePullSecrets)
	}
	if want.noToken {
		want.obj.Object["automountServiceAccountToken"] = false
	}
	log.FromContext(ctx).Info("applying the propagation intent", "annotations", want.annotations, "credentials", want.secrets)
	err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.obj), fieldOwner, client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

func references(names []string) []any {
	refs := make([]any, len(names))
	for i, name := range names {
		refs[i] = map[string]any{"name": name}
	}
	return refs
}

// hncRefusal returns HNC's reason when its webhook refused to let the object propagate (an
// object of the same name below it, or conflicting propagation annotations), or "".
func hncRefusal(err error) string {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return ""
	}
	refused := apierrors.IsConflict(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	if !refused || !strings.Contains(status.Status().Message, hncv1alpha2.MetaGroup) {
		return ""
	}
	// Keep HNC's own words: drop the webhook's and the status reason's preambles.
	message := status.Status().Message
	if _, after, found := strings.Cut(message, "denied the request: "); found {
		message = after
	}
	if strings.HasPrefix(message, "Operation cannot be fulfilled on ") {
		if _, after, found := strings.Cut(message, "\": "); found {
			message = after
		}
	}
	return message
}

// get returns the object from the cache or, when the cache does not hold it (the cache holds
// only labelled Secrets and ServiceAccounts: this one has just lost its label), from the API
// server; nil if it is gone.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey) (client.Object, error) {
	obj := r.newObject()
	err := r.client.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		return obj, err
	}
	if err := r.uncached.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// serviceAccountCredentials returns the names of the credential Secrets that a build
// ServiceAccount in the namespace lists.
func (r *Reconciler) serviceAccountCredentials(ctx context.Context, ns *corev1.Namespace) ([]string, error) {
	secrets := &corev1.SecretList{}
	if err := r.client.List(ctx, secrets, client.InNamespace(ns.Name), client.MatchingLabelsSelector{Selector: buildconfig.Selector}); err != nil {
		return nil, fmt.Errorf("listing the credentials of %s: %w", ns.Name, err)
	}
	return buildconfig.ServiceAccountCredentials(ns, secrets.Items), nil
}

// serviceAccountsInNamespace maps a Secret to the build-config ServiceAccounts beside it.
func (r *Reconciler) serviceAccountsInNamespace(ctx context.Context, secret client.Object) []reconcile.Request {
	sas := &corev1.ServiceAccountList{}
	if err := r.client.List(ctx, sas, client.InNamespace(secret.GetNamespace()), client.MatchingLabelsSelector{Selector: buildconfig.Selector}); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(sas.Items))
	for _, sa := range sas.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sa)})
	}
	return requests
}

func isBuildConfig(obj client.Object) bool {
	return buildconfig.Selector.Matches(labels.Set(obj.GetLabels()))
}

func isSubset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
