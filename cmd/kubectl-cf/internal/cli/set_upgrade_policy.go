package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// upgradePolicies are the values of an org's buildpack upgrade policy.
var upgradePolicies = []cfv1alpha1.BuildpackUpgradePolicy{cfv1alpha1.AutomaticUpgrades, cfv1alpha1.HeldUpgrades}

func newSetUpgradePolicyCommand(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "set-upgrade-policy ORG Automatic|Held",
		Short: "Say whether an org's apps run the droplets kpack rebuilds for new buildpacks at once, or after a restage",
		Long: "Set the org's buildpack upgrade policy (CFOrg spec.buildpackUpgradePolicy, in the root namespace). When kpack " +
			"rebuilds an app for new buildpacks or a new lifecycle, Automatic moves the app to the rebuilt droplet as soon as it " +
			"staged; Held, the default, keeps the app on its droplet and holds the rebuilt one until `kubectl cf restage APP`. " +
			"Rebuilds for a new stack run image (a base-image fix) move apps at once under either policy. Switching to " +
			"Automatic also moves the apps that hold a droplet now.",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: s.completeOrgThenPolicy,
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := parsePolicy(args[1])
			if err != nil {
				return err
			}
			c, org, err := s.clientAndOrg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			previous := org.Spec.BuildpackUpgradePolicy
			if previous == "" {
				previous = cfv1alpha1.HeldUpgrades
			}
			if previous == policy {
				fmt.Fprintf(out, "org %q: the buildpack upgrade policy is %s already\n", org.Spec.DisplayName, policy)
				return nil
			}
			patch := client.MergeFrom(org.DeepCopy())
			org.Spec.BuildpackUpgradePolicy = policy
			if err := c.Patch(cmd.Context(), org, patch); err != nil {
				return fmt.Errorf("setting the buildpack upgrade policy of org %q: %w", org.Spec.DisplayName, rejected(err))
			}
			fmt.Fprintf(out, "org %q: buildpack upgrade policy %s (was %s): %s\n", org.Spec.DisplayName, policy, previous, policyEffect(policy))
			return nil
		},
	}
}

// parsePolicy reads a policy, ignoring case.
func parsePolicy(value string) (cfv1alpha1.BuildpackUpgradePolicy, error) {
	names := make([]string, len(upgradePolicies))
	for i, policy := range upgradePolicies {
		if strings.EqualFold(value, string(policy)) {
			return policy, nil
		}
		names[i] = string(policy)
	}
	return "", fmt.Errorf("unknown policy %q: an org's buildpack upgrade policy is %s", value, strings.Join(names, " or "))
}

// policyEffect says what a policy does, for a person.
func policyEffect(policy cfv1alpha1.BuildpackUpgradePolicy) string {
	if policy == cfv1alpha1.AutomaticUpgrades {
		return "its apps move to the droplets kpack rebuilds for new buildpacks or a new lifecycle as soon as they staged, held ones now"
	}
	return "droplets that kpack rebuilds for new buildpacks or a new lifecycle are held until `kubectl cf restage APP`; stack fixes still move apps at once"
}
