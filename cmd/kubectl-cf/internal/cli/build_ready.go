package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// checkBuildReady returns why a space cannot build and what must happen first, or nil when it
// can: its BuildReady condition's reason and message, and the step that ends that reason.
func checkBuildReady(t target) error {
	conditions := t.space.Status.Conditions
	buildReady := meta.FindStatusCondition(conditions, cfv1alpha1.BuildReadyCondition)
	if buildReady != nil && buildReady.Status == metav1.ConditionTrue {
		return nil
	}
	if ready := meta.FindStatusCondition(conditions, cfv1alpha1.ReadyCondition); ready != nil && cfv1alpha1.NeedsOperator(ready.Reason) {
		return fmt.Errorf("%s cannot build: its namespace needs an operator: %s", t, describe(ready))
	}
	if buildReady == nil {
		return fmt.Errorf("%s cannot build: cf-hnc has not reported whether it can yet; %s", t, buildReadyRemedy("", t.orgName))
	}
	return fmt.Errorf("%s cannot build: BuildReady is %s; %s", t, describe(buildReady), buildReadyRemedy(buildReady.Reason, t.orgName))
}

// buildReadyRemedy says what ends a BuildReady reason: nearly always an operator's step, since
// a space developer cannot place build configuration.
func buildReadyRemedy(reason, org string) string {
	setRegistry := fmt.Sprintf("kubectl cf set-registry %s --server HOST --username USER --password-stdin --droplet-repository PREFIX", org)
	switch reason {
	case cfv1alpha1.RegistryCredentialsMissingReason:
		return "an operator must place the org's registry credentials: " + setRegistry
	case cfv1alpha1.InvalidDockerConfigReason:
		return "an operator must replace the invalid registry credentials: " + setRegistry
	case cfv1alpha1.DropletRepositoryMissingReason:
		return "an operator must say where the org's droplets go: " + setRegistry
	case cfv1alpha1.InvalidDropletRepositoryReason:
		return "an operator must correct the droplet repository (a space's own lies within its path below the org's, or outside the org's with the space's own credentials): " + setRegistry
	case cfv1alpha1.ServiceAccountMissingReason, cfv1alpha1.ServiceAccountSecretMissingReason, cfv1alpha1.CredentialsNotOnServiceAccountReason:
		return "an operator must place the build ServiceAccount with the credentials, which set-registry does: " + setRegistry
	case cfv1alpha1.AmbiguousBuildConfigReason:
		return "an operator must remove all but one of the objects that the message names"
	case cfv1alpha1.BuildConfigNameConflictReason:
		return "an operator must rename or remove the space's object that the message names"
	case cfv1alpha1.PropagationBlockedReason:
		return "an operator must resolve what HNC refuses, as the message says"
	case cfv1alpha1.BuilderMissingReason:
		return "an operator must place a default kpack Builder labelled " + cfv1alpha1.BuildConfigLabel + "=true in the org or the root namespace"
	case cfv1alpha1.BuilderNotReadyReason:
		return "kpack has not built the default Builder yet; if that lasts, an operator must look at the Builder's status"
	case cfv1alpha1.PropagationPendingReason, cfv1alpha1.NamespaceNotReadyReason, "":
		return "this usually passes within seconds: push again in a moment"
	}
	return "an operator must correct the space's build configuration (kubectl cf tree shows every space's reason)"
}
