package staging

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The webhooks see a creation, and an update only when it changes what they check: an update
// of anything else (an administrator removing a finalizer while the manager is down) does not
// wait for them.
// +kubebuilder:webhook:path=/validate-workloads-cloudfoundry-org-v1alpha1-cfapp,mutating=false,failurePolicy=fail,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cfapps,verbs=create;update,versions=v1alpha1,name=vcfapp.workloads.cloudfoundry.org,admissionReviewVersions=v1,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"matchConditions":[{"name":"lifecycle-changes","expression":"request.operation == 'CREATE' || object.spec.lifecycle != oldObject.spec.lifecycle"}]}`
// +kubebuilder:webhook:path=/validate-workloads-cloudfoundry-org-v1alpha1-cfbuild,mutating=false,failurePolicy=fail,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cfbuilds,verbs=create,versions=v1alpha1,name=vcfbuild.workloads.cloudfoundry.org,admissionReviewVersions=v1,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system

// +kubebuilder:rbac:groups=kpack.io,resources=clusterstacks;clusterstores,verbs=get;list;watch

// SetupWebhooks registers the validating webhooks of apps and builds, which read the cache
// for at most deadline: a replica whose cache is still filling refuses, saying so, rather than
// hold the request until the apiserver gives up.
func SetupWebhooks(mgr ctrl.Manager, deadline time.Duration) error {
	lifecycles := &lifecycleValidator{reader: mgr.GetClient(), deadline: deadline}
	if err := ctrl.NewWebhookManagedBy(mgr, &cfv1alpha1.CFApp{}).WithValidator(&AppValidator{lifecycles}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &cfv1alpha1.CFBuild{}).WithValidator(&BuildValidator{lifecycles}).Complete()
}

var lifecyclePath = field.NewPath("spec", "lifecycle")

// lifecycleValidator checks a lifecycle against what the cluster can build: the buildpack
// type, a ClusterStack of the stack's name, buildpacks of the space's store.
type lifecycleValidator struct {
	reader   client.Reader
	deadline time.Duration
}

func (v *lifecycleValidator) validate(ctx context.Context, namespace string, lifecycle cfv1alpha1.Lifecycle) field.ErrorList {
	ctx, cancel := context.WithTimeout(ctx, v.deadline)
	defer cancel()
	var errs field.ErrorList
	if lifecycle.Type != cfv1alpha1.BuildpackLifecycle {
		errs = append(errs, field.NotSupported(lifecyclePath.Child("type"), lifecycle.Type, []cfv1alpha1.LifecycleType{cfv1alpha1.BuildpackLifecycle}))
	}
	if stack := lifecycle.Data.Stack; stack != "" {
		err := v.reader.Get(ctx, client.ObjectKey{Name: stack}, &kpackv1alpha2.ClusterStack{})
		if apierrors.IsNotFound(err) {
			errs = append(errs, field.Invalid(lifecyclePath.Child("data", "stack"), stack,
				fmt.Sprintf("unknown stack; the stacks are: %s", v.stacks(ctx))))
		} else if err != nil {
			errs = append(errs, field.InternalError(lifecyclePath.Child("data", "stack"), err))
		}
	}
	if len(lifecycle.Data.Buildpacks) == 0 {
		return errs
	}
	known, err := v.buildpacks(ctx, namespace)
	if err != nil {
		return append(errs, field.InternalError(lifecyclePath.Child("data", "buildpacks"), err))
	}
	for i, bp := range lifecycle.Data.Buildpacks {
		if !slices.Contains(known, bp) {
			errs = append(errs, field.Invalid(lifecyclePath.Child("data", "buildpacks").Index(i), bp,
				fmt.Sprintf("unknown buildpack; the store has: %s", strings.Join(known, ", "))))
		}
	}
	return errs
}

// buildpacks returns the buildpack ids of the store of the space's default Builder, or of
// every ClusterStore while the space has none.
func (v *lifecycleValidator) buildpacks(ctx context.Context, namespace string) ([]string, error) {
	stores := &kpackv1alpha2.ClusterStoreList{}
	if err := v.reader.List(ctx, stores); err != nil {
		return nil, err
	}
	store := v.spaceStore(ctx, namespace)
	var ids []string
	for _, s := range stores.Items {
		if store != "" && s.Name != store {
			continue
		}
		for _, bp := range s.Status.Buildpacks {
			if !slices.Contains(ids, bp.Id) {
				ids = append(ids, bp.Id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// spaceStore is the ClusterStore of the space's default Builder, or "" if it is not known.
// The Builder is read where the operator placed it (the space, its org or the root): one placed
// above has no copy in the space, only the ClusterBuilder that cf-hnc makes of it.
func (v *lifecycleValidator) spaceStore(ctx context.Context, namespace string) string {
	ns := &corev1.Namespace{}
	space := &cfv1alpha1.CFSpace{}
	builder := &kpackv1alpha2.Builder{}
	if v.reader.Get(ctx, client.ObjectKey{Name: namespace}, ns) != nil ||
		v.reader.Get(ctx, client.ObjectKey{Namespace: ns.Labels[cfv1alpha1.OrgGUIDLabel], Name: namespace}, space) != nil ||
		space.Status.Build == nil || space.Status.Build.Builder == nil {
		return ""
	}
	placed := space.Status.Build.Builder
	if v.reader.Get(ctx, client.ObjectKey{Namespace: placed.From, Name: placed.Name}, builder) != nil {
		return ""
	}
	return builder.Spec.Store.Name
}

func (v *lifecycleValidator) stacks(ctx context.Context) string {
	stacks := &kpackv1alpha2.ClusterStackList{}
	if err := v.reader.List(ctx, stacks); err != nil {
		return "(cannot list them: " + err.Error() + ")"
	}
	names := make([]string, len(stacks.Items))
	for i, s := range stacks.Items {
		names[i] = s.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// AppValidator rejects apps whose lifecycle cannot be built.
type AppValidator struct{ lifecycles *lifecycleValidator }

var _ admission.Validator[*cfv1alpha1.CFApp] = (*AppValidator)(nil)

// ValidateCreate checks the app's GUID, which names its kpack Image, and its lifecycle.
func (v *AppValidator) ValidateCreate(ctx context.Context, app *cfv1alpha1.CFApp) (admission.Warnings, error) {
	errs := validGUID(app.Name)
	return nil, invalid("CFApp", app.Name, append(errs, v.lifecycles.validate(ctx, app.Namespace, app.Spec.Lifecycle)...))
}

// ValidateUpdate checks a changed lifecycle.
func (v *AppValidator) ValidateUpdate(ctx context.Context, old, app *cfv1alpha1.CFApp) (admission.Warnings, error) {
	if old.Spec.Lifecycle.Equal(app.Spec.Lifecycle) {
		return nil, nil
	}
	return nil, invalid("CFApp", app.Name, v.lifecycles.validate(ctx, app.Namespace, app.Spec.Lifecycle))
}

// ValidateDelete allows every deletion.
func (v *AppValidator) ValidateDelete(context.Context, *cfv1alpha1.CFApp) (admission.Warnings, error) {
	return nil, nil
}

// BuildValidator rejects builds whose lifecycle cannot be built. Who may mark a build as a
// rebuild is config/policies' to say, and its spec cannot change (the CRD says so).
type BuildValidator struct{ lifecycles *lifecycleValidator }

var _ admission.Validator[*cfv1alpha1.CFBuild] = (*BuildValidator)(nil)

// ValidateCreate checks the build's GUID and its lifecycle.
func (v *BuildValidator) ValidateCreate(ctx context.Context, build *cfv1alpha1.CFBuild) (admission.Warnings, error) {
	errs := validGUID(build.Name)
	return nil, invalid("CFBuild", build.Name, append(errs, v.lifecycles.validate(ctx, build.Namespace, build.Spec.Lifecycle)...))
}

// ValidateUpdate allows every update: the webhook is called for creations only.
func (v *BuildValidator) ValidateUpdate(context.Context, *cfv1alpha1.CFBuild, *cfv1alpha1.CFBuild) (admission.Warnings, error) {
	return nil, nil
}

// validGUID refuses a GUID that cannot name what cf-hnc makes from the object.
func validGUID(name string) field.ErrorList {
	if message := cfv1alpha1.ValidateGUID(name); message != "" {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, message)}
	}
	return nil
}

// ValidateDelete allows every deletion.
func (v *BuildValidator) ValidateDelete(context.Context, *cfv1alpha1.CFBuild) (admission.Warnings, error) {
	return nil, nil
}

func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(cfv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
