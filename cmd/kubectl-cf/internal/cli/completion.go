package cli

import (
	"cmp"
	"slices"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Shell completion of org, space and app names, and of buildpacks and stacks. kubectl asks the
// plugin through cobra's __complete command, which the kubectl_complete-cf script runs; the
// connection flags given so far on the command line apply.

// completion is the names offered for what has been typed, which they begin with ignoring
// case, as Cloud Foundry compares names.
func completion(names []string, typed string) ([]string, cobra.ShellCompDirective) {
	var offered []string
	for _, name := range names {
		if strings.HasPrefix(strings.ToLower(name), strings.ToLower(typed)) && !slices.Contains(offered, name) {
			offered = append(offered, name)
		}
	}
	slices.SortFunc(offered, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a), strings.ToLower(b)), cmp.Compare(a, b))
	})
	return offered, cobra.ShellCompDirectiveNoFileComp
}

// failed is the completion when the cluster cannot be asked: nothing, and no file names.
func failed() ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
}

// orgNames are the display names of the orgs.
func (s *session) orgNames(cmd *cobra.Command) ([]string, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := c.List(cmd.Context(), orgs, client.InNamespace(s.root)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(orgs.Items))
	for _, org := range orgs.Items {
		names = append(names, org.Spec.DisplayName)
	}
	return names, nil
}

// spaceNames are the display names of the spaces of the org that key names.
func (s *session) spaceNames(cmd *cobra.Command, key string) ([]string, error) {
	c, org, err := s.clientAndOrg(cmd.Context(), key)
	if err != nil {
		return nil, err
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := c.List(cmd.Context(), spaces, client.InNamespace(org.Name)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(spaces.Items))
	for _, space := range spaces.Items {
		names = append(names, space.Spec.DisplayName)
	}
	return names, nil
}

// completeOrgs completes an org name (the --org flag; create-space's first argument).
func (s *session) completeOrgs(cmd *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	names, err := s.orgNames(cmd)
	if err != nil {
		return failed()
	}
	return completion(names, typed)
}

// completeSpacesOfOrgFlag completes the --space flag with the spaces of --org.
func (s *session) completeSpacesOfOrgFlag(cmd *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	org, _ := cmd.Flags().GetString("org")
	if org == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := s.spaceNames(cmd, org)
	if err != nil {
		return failed()
	}
	return completion(names, typed)
}

// completeOrgArg completes a command's first argument, an org (create-space, delete-org).
func (s *session) completeOrgArg(cmd *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return s.completeOrgs(cmd, args, typed)
}

// completeOrgThenSpace completes ORG, then SPACE of that org (delete-space, set-registry).
func (s *session) completeOrgThenSpace(cmd *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return s.completeOrgs(cmd, args, typed)
	case 1:
		names, err := s.spaceNames(cmd, args[0])
		if err != nil {
			return failed()
		}
		return completion(names, typed)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeOrgThenPolicy completes set-upgrade-policy's ORG, then the policy.
func (s *session) completeOrgThenPolicy(cmd *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return s.completeOrgs(cmd, args, typed)
	}
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(upgradePolicies))
	for i, policy := range upgradePolicies {
		names[i] = string(policy)
	}
	return completion(names, typed)
}

// completeApps completes the APP argument with the apps of the space that the target flags
// name so far.
func (s *session) completeApps(t *targetFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := s.client()
		if err != nil {
			return failed()
		}
		space, err := t.resolve(cmd.Context(), s, c)
		if err != nil {
			return failed()
		}
		apps := &cfv1alpha1.CFAppList{}
		if err := c.List(cmd.Context(), apps, client.InNamespace(space.space.Name)); err != nil {
			return failed()
		}
		names := make([]string, 0, len(apps.Items))
		for _, app := range apps.Items {
			names = append(names, app.Spec.DisplayName)
		}
		return completion(names, typed)
	}
}

// completeBuildpacks completes -b with the buildpacks of the ClusterStores.
func (s *session) completeBuildpacks(cmd *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	c, err := s.client()
	if err != nil {
		return failed()
	}
	stores := &kpackv1alpha2.ClusterStoreList{}
	if err := c.List(cmd.Context(), stores); err != nil {
		return failed()
	}
	names := []string{"default"}
	for _, store := range stores.Items {
		for _, bp := range store.Status.Buildpacks {
			names = append(names, bp.Id)
		}
	}
	return completion(names, typed)
}

// completeStacks completes --stack with the ClusterStacks.
func (s *session) completeStacks(cmd *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	c, err := s.client()
	if err != nil {
		return failed()
	}
	stacks := &kpackv1alpha2.ClusterStackList{}
	if err := c.List(cmd.Context(), stacks); err != nil {
		return failed()
	}
	names := make([]string, 0, len(stacks.Items))
	for _, stack := range stacks.Items {
		names = append(names, stack.Name)
	}
	return completion(names, typed)
}
