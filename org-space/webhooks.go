package orgspace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The webhooks see a creation, and an update only when it renames: an update of anything else
// (an administrator removing a finalizer while the manager is down) does not wait for them.
// The mutating ones fail open: the reconcilers add what they add (the label, the finalizer),
// and during an upgrade the replicas of the release before do not serve them.
// +kubebuilder:webhook:path=/validate-workloads-cloudfoundry-org-v1alpha1-cforg,mutating=false,failurePolicy=fail,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cforgs,verbs=create;update,versions=v1alpha1,name=vcforg.workloads.cloudfoundry.org,admissionReviewVersions=v1,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"matchConditions":[{"name":"renames","expression":"request.operation == 'CREATE' || object.spec.displayName != oldObject.spec.displayName"}]}`
// +kubebuilder:webhook:path=/mutate-workloads-cloudfoundry-org-v1alpha1-cforg,mutating=true,failurePolicy=ignore,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cforgs,verbs=create;update,versions=v1alpha1,name=mcforg.workloads.cloudfoundry.org,admissionReviewVersions=v1,timeoutSeconds=5,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"matchConditions":[{"name":"renames","expression":"request.operation == 'CREATE' || object.spec.displayName != oldObject.spec.displayName"}]}`
// +kubebuilder:webhook:path=/mutate-workloads-cloudfoundry-org-v1alpha1-cfspace,mutating=true,failurePolicy=ignore,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cfspaces,verbs=create;update,versions=v1alpha1,name=mcfspace.workloads.cloudfoundry.org,admissionReviewVersions=v1,timeoutSeconds=5,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"matchConditions":[{"name":"renames","expression":"request.operation == 'CREATE' || object.spec.displayName != oldObject.spec.displayName"}]}`
// +kubebuilder:webhook:path=/validate-workloads-cloudfoundry-org-v1alpha1-cfspace,mutating=false,failurePolicy=fail,sideEffects=None,groups=workloads.cloudfoundry.org,resources=cfspaces,verbs=create;update,versions=v1alpha1,name=vcfspace.workloads.cloudfoundry.org,admissionReviewVersions=v1,serviceName=cf-hnc-webhook-service,serviceNamespace=cf-hnc-system,patch=`{"matchConditions":[{"name":"renames","expression":"request.operation == 'CREATE' || object.spec.displayName != oldObject.spec.displayName"}]}`

// The messages of the Cloud Foundry API for taken names.
const (
	orgNameTaken   = "Organization '%s' already exists."
	spaceNameTaken = "Name must be unique per organization"
)

var displayNamePath = field.NewPath("spec", "displayName")

// SetupWebhooks registers the webhooks of orgs and spaces. The mutating ones label each with
// the key of its display name as it is created or renamed, and add its finalizer as it is
// created; the validating ones find a taken name by that label (names). The reconcilers settle
// what a race lets through (DuplicateName), and label what was made without the webhooks.
func SetupWebhooks(mgr ctrl.Manager, root string, deadline time.Duration) error {
	n := names{cached: mgr.GetClient(), live: mgr.GetAPIReader(), deadline: deadline}
	if err := ctrl.NewWebhookManagedBy(mgr, &cfv1alpha1.CFOrg{}).
		WithDefaulter(defaulter[*cfv1alpha1.CFOrg]{}).
		WithValidator(&OrgValidator{names: n, root: root}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &cfv1alpha1.CFSpace{}).
		WithDefaulter(defaulter[*cfv1alpha1.CFSpace]{}).
		WithValidator(&SpaceValidator{names: n, root: root}).Complete()
}

// names reads what the validators check: the orgs or spaces that have a display name's key
// (the objects of one name, not every org, or every space of an org), and a space's org. It
// reads the cache first, and the apiserver again only for a name the cache says is free or an
// org it does not hold yet: two orgs created in quick succession must see each other. Both
// reads end by the deadline, so that a cache still filling (a replica that just started) or a
// slow apiserver answers the admission request with a refusal that says so, well before the
// apiserver gives up on the webhook (failing closed either way).
type names struct {
	cached, live client.Reader
	deadline     time.Duration
}

// nameTaken lists into list the objects of its kind in namespace whose display name has the
// key of displayName, and says whether takenIn, which looks at list, finds it taken.
func (n names) nameTaken(ctx context.Context, list client.ObjectList, namespace, displayName string, takenIn func() bool) (bool, error) {
	for _, reader := range []client.Reader{n.cached, n.live} {
		if err := reader.List(ctx, list, client.InNamespace(namespace), sameKey(displayName)); err != nil {
			return false, unanswered(ctx, err)
		}
		if takenIn() {
			return true, nil
		}
	}
	return false, nil
}

// exists says whether obj exists, in the cache or else in the apiserver.
func (n names) exists(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	err := n.cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = n.live.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, unanswered(ctx, err)
}

// unanswered is the refusal of a request whose reads failed: a timeout that says to try again
// when they ran out of time.
func unanswered(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return apierrors.NewTimeoutError(fmt.Sprintf("cf-hnc could not check the name in time (%v); try again", err), 1)
	}
	return apierrors.NewInternalError(err)
}

// defaulter labels an org or a space with the key of its display name and, as it is created,
// adds the finalizer: the first reconcile then goes straight to the anchor, with no write
// before it.
type defaulter[T cfv1alpha1.DisplayNamed] struct{}

func (defaulter[T]) Default(ctx context.Context, obj T) error {
	setDisplayNameKey(obj)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create {
		controllerutil.AddFinalizer(obj, Finalizer)
	}
	return nil
}

// setDisplayNameKey labels obj with the key of its display name; it says whether it changed
// the label.
func setDisplayNameKey(obj cfv1alpha1.DisplayNamed) bool {
	key := cfv1alpha1.DisplayNameKey(obj.GetDisplayName())
	labels := obj.GetLabels()
	if labels[cfv1alpha1.DisplayNameKeyLabel] == key {
		return false
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[cfv1alpha1.DisplayNameKeyLabel] = key
	obj.SetLabels(labels)
	return true
}

// sameKey selects the objects whose display name has the key of displayName.
func sameKey(displayName string) client.MatchingLabels {
	return client.MatchingLabels{cfv1alpha1.DisplayNameKeyLabel: cfv1alpha1.DisplayNameKey(displayName)}
}

// OrgValidator keeps orgs in the root namespace with unique display names.
type OrgValidator struct {
	names
	root string
}

var _ admission.Validator[*cfv1alpha1.CFOrg] = (*OrgValidator)(nil)

// ValidateCreate rejects an org outside the root namespace, with a name that is not a UUID
// (it names the org's namespace), or with a taken display name.
func (v *OrgValidator) ValidateCreate(ctx context.Context, org *cfv1alpha1.CFOrg) (admission.Warnings, error) {
	if org.Namespace != v.root {
		return nil, invalid("CFOrg", org.Name, field.Invalid(field.NewPath("metadata", "namespace"), org.Namespace,
			fmt.Sprintf("orgs are created in the root namespace %q", v.root)))
	}
	if err := validGUID("CFOrg", org.Name); err != nil {
		return nil, err
	}
	return nil, v.checkName(ctx, org)
}

// ValidateUpdate rejects renaming an org to a taken display name.
func (v *OrgValidator) ValidateUpdate(ctx context.Context, old, org *cfv1alpha1.CFOrg) (admission.Warnings, error) {
	if old.Spec.DisplayName == org.Spec.DisplayName {
		return nil, nil
	}
	return nil, v.checkName(ctx, org)
}

// ValidateDelete allows every deletion.
func (v *OrgValidator) ValidateDelete(context.Context, *cfv1alpha1.CFOrg) (admission.Warnings, error) {
	return nil, nil
}

func (v *OrgValidator) checkName(ctx context.Context, org *cfv1alpha1.CFOrg) error {
	ctx, cancel := context.WithTimeout(ctx, v.deadline)
	defer cancel()
	orgs := &cfv1alpha1.CFOrgList{}
	isTaken, err := v.nameTaken(ctx, orgs, v.root, org.Spec.DisplayName, func() bool { return taken(orgs.Items, org.Name, org.Spec.DisplayName) })
	if err != nil {
		return err
	}
	if isTaken {
		return invalid("CFOrg", org.Name, field.Invalid(displayNamePath, org.Spec.DisplayName,
			fmt.Sprintf(orgNameTaken, org.Spec.DisplayName)))
	}
	return nil
}

// SpaceValidator keeps spaces in org namespaces with display names unique per org.
type SpaceValidator struct {
	names
	root string
}

var _ admission.Validator[*cfv1alpha1.CFSpace] = (*SpaceValidator)(nil)

// ValidateCreate rejects a space outside an org namespace, with a name that is not a UUID (it
// names the space's namespace), or with a display name taken in its org. The two checks run
// at once: every `cf create-space` waits for them.
func (v *SpaceValidator) ValidateCreate(ctx context.Context, space *cfv1alpha1.CFSpace) (admission.Warnings, error) {
	ctx, cancel := context.WithTimeout(ctx, v.deadline)
	defer cancel()
	var orgErr, nameErr error
	var reads sync.WaitGroup
	reads.Go(func() { orgErr = v.checkOrg(ctx, space) })
	reads.Go(func() { nameErr = v.checkName(ctx, space) })
	reads.Wait()
	return nil, cmp.Or(orgErr, validGUID("CFSpace", space.Name), nameErr)
}

// ValidateUpdate rejects renaming a space to a name taken in its org.
func (v *SpaceValidator) ValidateUpdate(ctx context.Context, old, space *cfv1alpha1.CFSpace) (admission.Warnings, error) {
	if old.Spec.DisplayName == space.Spec.DisplayName {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, v.deadline)
	defer cancel()
	return nil, v.checkName(ctx, space)
}

// ValidateDelete allows every deletion.
func (v *SpaceValidator) ValidateDelete(context.Context, *cfv1alpha1.CFSpace) (admission.Warnings, error) {
	return nil, nil
}

func (v *SpaceValidator) checkOrg(ctx context.Context, space *cfv1alpha1.CFSpace) error {
	exists, err := v.exists(ctx, client.ObjectKey{Namespace: v.root, Name: space.Namespace}, &cfv1alpha1.CFOrg{})
	if err != nil || exists {
		return err
	}
	return invalid("CFSpace", space.Name, field.Invalid(field.NewPath("metadata", "namespace"), space.Namespace,
		fmt.Sprintf("spaces are created in the namespace of their org; there is no org %q in %q", space.Namespace, v.root)))
}

func (v *SpaceValidator) checkName(ctx context.Context, space *cfv1alpha1.CFSpace) error {
	spaces := &cfv1alpha1.CFSpaceList{}
	isTaken, err := v.nameTaken(ctx, spaces, space.Namespace, space.Spec.DisplayName, func() bool { return taken(spaces.Items, space.Name, space.Spec.DisplayName) })
	if err != nil {
		return err
	}
	if isTaken {
		return invalid("CFSpace", space.Name, field.Invalid(displayNamePath, space.Spec.DisplayName, spaceNameTaken))
	}
	return nil
}

// taken says whether another live object owns the display name.
func taken[T any, P interface {
	*T
	cfv1alpha1.DisplayNamed
}](items []T, name, displayName string) bool {
	others := slices.DeleteFunc(slices.Clone(items), func(item T) bool { return P(&item).GetName() == name })
	return cfv1alpha1.DisplayNameOwner[T, P](others, displayName) != nil
}

// validGUID rejects an org or a space whose GUID is not a UUID: it names a namespace.
func validGUID(kind, name string) error {
	if message := cfv1alpha1.ValidateNamespaceGUID(name); message != "" {
		return invalid(kind, name, field.Invalid(field.NewPath("metadata", "name"), name, message))
	}
	return nil
}

func invalid(kind, name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(cfv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
