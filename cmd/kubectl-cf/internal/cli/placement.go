package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// placement is where set-registry places build configuration and which spaces it affects.
type placement struct {
	// level is cfv1alpha1.RootLevel, OrgLevel or SpaceLevel.
	level string
	// root is the root namespace.
	root string
	// namespace receives the objects: the root namespace, an org's or a space's.
	namespace string
	// org is the namespace of the affected spaces; empty for the spaces of every org.
	org string
	// orgs are the display names of the affected orgs, by GUID.
	orgs map[string]string
	// description names the placement for a person.
	description string
}

func (p placement) secretName() string         { return cfv1alpha1.RegistrySecretName(p.level) }
func (p placement) serviceAccountName() string { return cfv1alpha1.BuildServiceAccountName(p.level) }

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
		return placement{level: cfv1alpha1.RootLevel, root: s.root, namespace: s.root, orgs: names, description: "all orgs"}, nil
	}
	org, err := cf.FindOrg(ctx, c, s.root, args[0])
	if err != nil {
		return placement{}, err
	}
	p := placement{level: cfv1alpha1.OrgLevel, root: s.root, namespace: org.Name, org: org.Name,
		orgs: map[string]string{org.Name: org.Spec.DisplayName}, description: fmt.Sprintf("org %q", org.Spec.DisplayName)}
	if len(args) == 1 {
		return p, nil
	}
	space, err := cf.FindSpace(ctx, c, org, args[1])
	if err != nil {
		return placement{}, err
	}
	p.level, p.namespace = cfv1alpha1.SpaceLevel, space.Name
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
		if inOrg && space.DeletionTimestamp.IsZero() && (p.level != cfv1alpha1.SpaceLevel || space.Name == p.namespace) {
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
		return p.level == cfv1alpha1.RootLevel
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

// spaceRepository is the repository of the placement's space as its org or the root places it:
// "<repository placed at the org>/<space GUID>", else "<the root's>/<org GUID>/<space GUID>"
// (api/v1alpha1.SpaceRepository). A space's own droplet repository may narrow it, or lie outside every repository placed above. It
// returns "" when neither the org nor the root places a droplet repository.
func (p placement) spaceRepository(ctx context.Context, c client.Client) (repository string, err error) {
	rootPlaced, err := placedRepositories(ctx, c, p.root)
	if err != nil {
		return "", err
	}
	orgPlaced, err := placedRepositories(ctx, c, p.org)
	if err != nil {
		return "", err
	}
	// HNC copies the root's build configuration into the org under the same names; an org's
	// own object of such a name would have been overwritten by the copy.
	for name := range rootPlaced {
		delete(orgPlaced, name)
	}
	switch {
	case len(orgPlaced) > 0:
		placed, err := single(orgPlaced, p.org)
		return cfv1alpha1.SpaceRepository(placed, []string{p.namespace}), err
	case len(rootPlaced) > 0:
		placed, err := single(rootPlaced, p.root)
		return cfv1alpha1.SpaceRepository(placed, []string{p.org, p.namespace}), err
	}
	return "", nil
}

// placedRepositories returns the droplet repositories that the build-config Secrets in a
// namespace set, by Secret name. It reads only the Secrets' metadata.
func placedRepositories(ctx context.Context, c client.Client, namespace string) (map[string]string, error) {
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels{cfv1alpha1.BuildConfigLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing the build-config Secrets of namespace %s: %w", namespace, err)
	}
	placed := map[string]string{}
	for _, secret := range secrets.Items {
		if prefix, ok := secret.Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation]; ok {
			placed[secret.Name] = prefix
		}
	}
	return placed, nil
}

// single is the one droplet repository placed in a namespace; cf-hnc refuses to build with two
// (AmbiguousBuildConfig), and so does set-registry.
func single(placed map[string]string, namespace string) (string, error) {
	names := slices.Sorted(maps.Keys(placed))
	if len(names) > 1 {
		return "", fmt.Errorf("Secrets %s in namespace %s both set the droplet repository: remove all but one", strings.Join(names, ", "), namespace)
	}
	return placed[names[0]], nil
}
