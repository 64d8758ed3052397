package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The levels at which set-registry places build configuration, as they appear in the names of
// what it places. The names differ per level because HNC overwrites an object in a namespace
// below with the one it propagates there under the same name.
const (
	rootLevel  = "root"
	orgLevel   = "org"
	spaceLevel = "space"
)

// placement is where set-registry places build configuration and which spaces it affects.
type placement struct {
	level string
	// namespace receives the objects: the root namespace, an org's or a space's.
	namespace string
	// org is the namespace of the affected spaces; empty for the spaces of every org.
	org string
	// orgs are the display names of the affected orgs, by GUID.
	orgs map[string]string
	// description names the placement for a person.
	description string
}

func (p placement) secretName() string         { return "cf-registry-" + p.level }
func (p placement) serviceAccountName() string { return "cf-build-" + p.level }

// place finds where set-registry writes: the root namespace for every org, or the namespace of
// the org, or of the space in the org, that args name.
func (s *session) place(ctx context.Context, c client.Client, allOrgs bool, args []string) (placement, error) {
	if allOrgs {
		orgs := &cfv1alpha1.CFOrgList{}
		if err := c.List(ctx, orgs, client.InNamespace(s.root)); err != nil {
			return placement{}, fmt.Errorf("listing orgs: %w", err)
		}
		names := make(map[string]string, len(orgs.Items))
		for _, org := range orgs.Items {
			names[org.Name] = org.Spec.DisplayName
		}
		return placement{level: rootLevel, namespace: s.root, orgs: names, description: "all orgs"}, nil
	}
	org, err := s.findOrg(ctx, c, args[0])
	if err != nil {
		return placement{}, err
	}
	p := placement{level: orgLevel, namespace: org.Name, org: org.Name,
		orgs: map[string]string{org.Name: org.Spec.DisplayName}, description: fmt.Sprintf("org %q", org.Spec.DisplayName)}
	if len(args) == 1 {
		return p, nil
	}
	space, err := findSpace(ctx, c, org, args[1])
	if err != nil {
		return placement{}, err
	}
	p.level, p.namespace = spaceLevel, space.Name
	p.description = fmt.Sprintf("space %q of org %q", space.Spec.DisplayName, org.Spec.DisplayName)
	return p, nil
}

// currentPrefix returns the droplet repository prefix of the Secret placed here before, if any.
// It reads only the Secret's metadata.
func (p placement) currentPrefix(ctx context.Context, c client.Client) (string, error) {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.secretName()}, secret)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Secret %s: %w", p.secretName(), err)
	}
	return secret.Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation], nil
}

// spaces returns the live spaces that the placement affects, in one List.
func (p placement) spaces(ctx context.Context, c client.Client) ([]cfv1alpha1.CFSpace, error) {
	list := &cfv1alpha1.CFSpaceList{}
	if err := c.List(ctx, list, client.InNamespace(p.org)); err != nil {
		return nil, fmt.Errorf("listing spaces: %w", err)
	}
	var affected []cfv1alpha1.CFSpace
	for _, space := range list.Items {
		_, inOrg := p.orgs[space.Namespace]
		if inOrg && space.DeletionTimestamp.IsZero() && (p.level != spaceLevel || space.Name == p.namespace) {
			affected = append(affected, space)
		}
	}
	return affected, nil
}

// settled says whether cf-hnc has resolved a space's build configuration since the placement:
// the space's credentials for host and its ServiceAccount are the placed ones or override them
// from nearer the space, and the credentials are on the ServiceAccount (cf-hnc lists them a
// moment after both arrive). A space without a namespace has nothing to pick up.
func (p placement) settled(space *cfv1alpha1.CFSpace, host string) bool {
	if !meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.ReadyCondition) {
		return true
	}
	build := space.Status.Build
	if build == nil || build.ServiceAccount == nil || !p.covers(space, *build.ServiceAccount, p.serviceAccountName()) {
		return false
	}
	i := slices.IndexFunc(build.RegistryCredentials, func(c cfv1alpha1.RegistryCredential) bool { return c.Registry == host })
	if i < 0 || !p.covers(space, build.RegistryCredentials[i].Secret, p.secretName()) {
		return false
	}
	buildReady := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	return buildReady != nil && buildReady.Reason != cfv1alpha1.CredentialsNotOnServiceAccountReason
}

// covers says whether an object that a space's build uses is the placed one (named name), or
// one placed nearer to the space, which wins over it.
func (p placement) covers(space *cfv1alpha1.CFSpace, used cfv1alpha1.PlacedObject, name string) bool {
	switch used.From {
	case p.namespace:
		return used.Name == name
	case space.Name:
		return true
	case space.Namespace:
		return p.level == rootLevel
	}
	return false
}

// showEffect waits, up to timeout, until every space the placement affects has settled, and
// prints whether each can build. Spaces that have not settled by then are shown as they are.
func (p placement) showEffect(ctx context.Context, c client.Client, out io.Writer, host string, timeout time.Duration) error {
	var spaces []cfv1alpha1.CFSpace
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		listed, err := p.spaces(ctx, c)
		if err != nil {
			return false, err
		}
		spaces = listed
		return !slices.ContainsFunc(spaces, func(s cfv1alpha1.CFSpace) bool { return !p.settled(&s, host) }), nil
	})
	pending := wait.Interrupted(err) && ctx.Err() == nil
	if err != nil && !pending {
		return err
	}
	if len(spaces) == 0 {
		fmt.Fprintf(out, "%s: no spaces yet\n", p.description)
		return nil
	}
	slices.SortFunc(spaces, func(a, b cfv1alpha1.CFSpace) int {
		return cmp.Or(cmp.Compare(strings.ToLower(p.orgs[a.Namespace]), strings.ToLower(p.orgs[b.Namespace])),
			cmp.Compare(a.Namespace, b.Namespace), byDisplayName(&a, &b))
	})
	rows := [][]string{{"ORG", "SPACE", "NAMESPACE", "BUILD READY"}}
	for _, space := range spaces {
		buildReady := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
		rows = append(rows, []string{p.orgs[space.Namespace], space.Spec.DisplayName, space.Name, status(buildReady)})
	}
	if err := writeTable(out, rows); err != nil {
		return err
	}
	if pending {
		fmt.Fprintf(out, "not every space has picked up the registry after %s; see kubectl cf tree\n", timeout)
	}
	return nil
}
