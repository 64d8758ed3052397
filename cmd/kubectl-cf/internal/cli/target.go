package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// target is the space an app command works in, with its org's name.
type target struct {
	orgName string
	space   *cfv1alpha1.CFSpace
}

func (t target) String() string {
	return fmt.Sprintf("space %q of org %q", t.space.Spec.DisplayName, t.orgName)
}

// targetFlags name the space of an app command: --org and --space, as `cf target -o ORG -s
// SPACE` does, or else the space whose namespace --namespace (or the kubeconfig's context)
// names.
type targetFlags struct {
	org, space string
}

// addFlags adds --org and --space (-s). withOrgShorthand also gives --org the shorthand -o, which
// the listing commands keep for kubectl's --output.
func (f *targetFlags) addFlags(cmd *cobra.Command, s *session, withOrgShorthand bool) {
	shorthand := ""
	if withOrgShorthand {
		shorthand = "o"
	}
	cmd.Flags().StringVarP(&f.org, "org", shorthand, "", "The org, by name or GUID (with --space; default: the org of the space that --namespace or the kubeconfig's context names).")
	cmd.Flags().StringVarP(&f.space, "space", "s", "", "The space in --org, by name or GUID.")
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("org", s.completeOrgs))
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("space", s.completeSpacesOfOrgFlag))
}

// errNoSpace is the error of an app command that names no space.
var errNoSpace = errors.New("no space given: name it with --org ORG --space SPACE, or with --namespace set to the space's namespace (its GUID)")

// resolve finds the space that the flags name: by --org and --space, else by the namespace of
// --namespace or the kubeconfig's context, which must be a space's.
func (f *targetFlags) resolve(ctx context.Context, s *session, c client.Client) (target, error) {
	if err := f.check(); err != nil {
		return target{}, err
	}
	if f.org != "" {
		org, err := s.findOrg(ctx, c, f.org)
		if err != nil {
			return target{}, err
		}
		space, err := findSpace(ctx, c, org, f.space)
		if err != nil {
			return target{}, err
		}
		return target{orgName: org.Spec.DisplayName, space: space}, nil
	}
	namespace, explicit, err := s.namespace()
	if err != nil {
		return target{}, err
	}
	t, err := s.spaceOfNamespace(ctx, c, namespace)
	if err != nil && !explicit {
		return target{}, errNoSpace
	}
	return t, err
}

// check refuses --org without --space, and --space without --org.
func (f *targetFlags) check() error {
	switch {
	case f.org != "" && f.space == "":
		return fmt.Errorf("--org %q: name the space in it with --space", f.org)
	case f.space != "" && f.org == "":
		return fmt.Errorf("--space %q: name its org with --org", f.space)
	}
	return nil
}

// spaceOfNamespace finds the space whose namespace is namespace, from the labels cf-hnc puts on
// space namespaces, and its org's name from the org's namespace. The CF roles let their members
// read these: a space role the space's namespace, an org role (which every member of a space
// holds, as in Cloud Foundry) the org's namespace and the CFSpace in it. The CFOrg itself, in the
// root namespace, is never read: no CF role may be bound there.
func (s *session) spaceOfNamespace(ctx context.Context, c client.Client, namespace string) (target, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsForbidden(err) {
			return target{}, fmt.Errorf("namespace %q: you have no CF role in it (a space role in the space, or an org role in its org): %w", namespace, err)
		}
		return target{}, fmt.Errorf("namespace %q: %w", namespace, err)
	}
	orgGUID, spaceGUID := ns.Labels[cfv1alpha1.OrgGUIDLabel], ns.Labels[cfv1alpha1.SpaceGUIDLabel]
	if spaceGUID != namespace || orgGUID == "" {
		return target{}, fmt.Errorf("namespace %q is not a space's: name the space with --org ORG --space SPACE", namespace)
	}
	space := &cfv1alpha1.CFSpace{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: orgGUID, Name: spaceGUID}, space); err != nil {
		if apierrors.IsForbidden(err) {
			return target{}, fmt.Errorf("the space of namespace %q: reading it takes a role in its org, which every member of a space "+
				"holds in Cloud Foundry: ask an org manager to bind cf-org-user to you in namespace %s: %w", namespace, orgGUID, err)
		}
		return target{}, fmt.Errorf("the space of namespace %q: %w", namespace, err)
	}
	orgNamespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: orgGUID}, orgNamespace); err != nil {
		return target{}, fmt.Errorf("the org of namespace %q: %w", namespace, err)
	}
	return target{orgName: orgNamespace.Annotations[cfv1alpha1.OrgNameAnnotation], space: space}, nil
}
