package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
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
		org, err := cf.FindOrg(ctx, c, s.root, f.org)
		if err != nil {
			return target{}, err
		}
		space, err := cf.FindSpace(ctx, c, org, f.space)
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

// spaceOfNamespace finds the space whose namespace is namespace (cf.SpaceOfNamespace).
func (s *session) spaceOfNamespace(ctx context.Context, c client.Client, namespace string) (target, error) {
	space, orgName, err := cf.SpaceOfNamespace(ctx, c, namespace)
	if err != nil {
		return target{}, err
	}
	return target{orgName: orgName, space: space}, nil
}
