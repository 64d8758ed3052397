package propagation

import (
	"context"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
)

// fieldOwner is the server-side apply field manager of what the Reconciler writes. Applying
// with it states everything it wants on an object: whatever it set before and no longer
// states is removed, which is how a removed label stops propagation.
const fieldOwner = client.FieldOwner("cf-hnc-propagation")

// propagateToAll is the HNC annotation that selects an object for propagation to every
// descendant when its kind is in AllowPropagate mode.
const propagateToAll = hncv1alpha2.AnnotationAllSelector

// Reconciler marks build-config objects for HNC propagation and keeps build-config
// ServiceAccounts listing the credential Secrets that win in their namespace.
type Reconciler struct {
	client    client.Client
	uncached  client.Reader
	newObject func() client.Object
	kind      schema.GroupVersionKind
}

// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kpack.io,resources=builders,verbs=get;list;watch;patch

// SetupWithManager registers one reconciler for each propagated kind: Secrets, ServiceAccounts
// and kpack Builders. The manager's cache holds only build-config Secrets and ServiceAccounts;
// uncached reads those that have just lost the label.
func SetupWithManager(mgr ctrl.Manager) error {
	kinds := []struct {
		name      string
		newObject func() client.Object
	}{
		{"secret", func() client.Object { return &corev1.Secret{} }},
		{"serviceaccount", func() client.Object { return &corev1.ServiceAccount{} }},
		{"builder", func() client.Object { return &kpackv1alpha2.Builder{} }},
	}
	for _, k := range kinds {
		gvk, err := mgr.GetClient().GroupVersionKindFor(k.newObject())
		if err != nil {
			return err
		}
		r := &Reconciler{client: mgr.GetClient(), uncached: mgr.GetAPIReader(), newObject: k.newObject, kind: gvk}
		b := ctrl.NewControllerManagedBy(mgr).Named("propagation-" + k.name).For(k.newObject())
		if k.name == "serviceaccount" {
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
	if !BuildConfigSelector.Matches(labels.Set(obj.GetLabels())) {
		return reconcile.Result{}, r.release(ctx, obj)
	}
	intent := r.intent(obj)
	var credentials []string
	sa, isServiceAccount := obj.(*corev1.ServiceAccount)
	if isServiceAccount {
		if credentials, err = r.winningCredentials(ctx, obj.GetNamespace()); err != nil {
			return reconcile.Result{}, err
		}
		setServiceAccountSecrets(intent, credentials)
	}
	if obj.GetAnnotations()[propagateToAll] == "true" && (!isServiceAccount || listsCredentials(sa, credentials)) {
		return reconcile.Result{}, nil
	}
	log.FromContext(ctx).Info("marking for propagation", "credentials", credentials)
	return reconcile.Result{}, r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(intent), fieldOwner, client.ForceOwnership)
}

// get returns the object from the cache or, when the cache does not hold it (the cache holds
// only labelled Secrets and ServiceAccounts), its metadata from the API server; nil if it is
// gone.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey) (client.Object, error) {
	obj := r.newObject()
	err := r.client.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		return obj, err
	}
	metadata := &metav1.PartialObjectMetadata{}
	metadata.SetGroupVersionKind(r.kind)
	if err := r.uncached.Get(ctx, key, metadata); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return metadata, nil
}

// release withdraws what cf-hnc set on an object that lost its label, if it set anything: HNC
// then deletes the copies. An operator's own propagation annotation stays.
func (r *Reconciler) release(ctx context.Context, obj client.Object) error {
	if !slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == string(fieldOwner) && f.Operation == metav1.ManagedFieldsOperationApply
	}) {
		return nil
	}
	log.FromContext(ctx).Info("no longer a build-config object; withdrawing propagation")
	return client.IgnoreNotFound(r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(r.intent(obj)), fieldOwner, client.ForceOwnership))
}

// intent is what cf-hnc wants on a build-config object: HNC propagates it. On an object that
// is no build-config object any more, it wants nothing.
func (r *Reconciler) intent(obj client.Object) *unstructured.Unstructured {
	intent := &unstructured.Unstructured{}
	intent.SetGroupVersionKind(r.kind)
	intent.SetNamespace(obj.GetNamespace())
	intent.SetName(obj.GetName())
	if BuildConfigSelector.Matches(labels.Set(obj.GetLabels())) {
		intent.SetAnnotations(map[string]string{propagateToAll: "true"})
	}
	return intent
}

// setServiceAccountSecrets makes a ServiceAccount list the credential Secrets, as secrets for
// kpack and as imagePullSecrets for pulling the builder image.
func setServiceAccountSecrets(intent *unstructured.Unstructured, credentials []string) {
	secrets := make([]any, len(credentials))
	for i, name := range credentials {
		secrets[i] = map[string]any{"name": name}
	}
	intent.Object["secrets"] = secrets
	intent.Object["imagePullSecrets"] = slices.Clone(secrets)
}

// listsCredentials says whether a ServiceAccount lists exactly the credentials. imagePullSecrets
// is an atomic list that only cf-hnc sets on a build-config ServiceAccount, so after cf-hnc's
// last apply it equals what cf-hnc stated; secrets may hold the operator's entries too.
func listsCredentials(sa *corev1.ServiceAccount, credentials []string) bool {
	var pull, listed []string
	for _, ref := range sa.ImagePullSecrets {
		pull = append(pull, ref.Name)
	}
	for _, ref := range sa.Secrets {
		listed = append(listed, ref.Name)
	}
	return slices.Equal(pull, credentials) && isSubset(credentials, listed)
}

// winningCredentials returns the names of the credential Secrets that win in a namespace, one
// per registry, in registry order.
func (r *Reconciler) winningCredentials(ctx context.Context, namespace string) ([]string, error) {
	in := buildInputs{namespace: &corev1.Namespace{}}
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, in.namespace); err != nil {
		return nil, err
	}
	secrets := &corev1.SecretList{}
	if err := r.client.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: BuildConfigSelector}); err != nil {
		return nil, err
	}
	in.secrets = secrets.Items
	var res resolution
	winners := res.resolveCredentials(in)
	var names []string
	for _, host := range sortedKeys(winners) {
		if !slices.Contains(names, winners[host].name) {
			names = append(names, winners[host].name)
		}
	}
	return names, nil
}

// serviceAccountsInNamespace maps a Secret to the build-config ServiceAccounts beside it.
func (r *Reconciler) serviceAccountsInNamespace(ctx context.Context, secret client.Object) []reconcile.Request {
	sas := &corev1.ServiceAccountList{}
	if err := r.client.List(ctx, sas, client.InNamespace(secret.GetNamespace()), client.MatchingLabelsSelector{Selector: BuildConfigSelector}); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(sas.Items))
	for _, sa := range sas.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sa)})
	}
	return requests
}

func isSubset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
