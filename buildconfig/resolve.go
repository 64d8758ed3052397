package buildconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
)

// inputs is everything the build configuration of one space is resolved from.
type inputs struct {
	ancestry ancestry
	// secrets and serviceAccounts are the build-config objects in the space: its own and the
	// copies HNC made of those placed above.
	secrets         []corev1.Secret
	serviceAccounts []corev1.ServiceAccount
	// builders are the default Builders placed in the space or above it.
	builders []builderCandidate
	// missingSecrets are the Secrets that a build-config ServiceAccount names but that do not
	// exist in the space.
	missingSecrets map[string]bool
	// unpropagated are the build-config objects placed above that have no copy in the space.
	unpropagated []unpropagated
}

// builderCandidate is a default Builder placed in the space or above it.
type builderCandidate struct {
	builder *kpackv1alpha2.Builder
	// clusterBuilder is what spaces build with for a Builder placed above them; nil for the
	// space's own Builder, or while cf-hnc has not made it.
	clusterBuilder *kpackv1alpha2.ClusterBuilder
}

// unpropagated is a build-config object placed above a space that HNC has not copied into it.
type unpropagated struct {
	kind, name, from string
	// blocked is HNC's refusal to propagate it, as the propagation reconciler recorded it.
	blocked string
	// conflicting says that the space holds an object of its own with that name.
	conflicting bool
}

// problem is one reason why a space cannot build.
type problem struct {
	reason  string
	message string
}

// resolution is the resolved build configuration and what is wrong with it.
type resolution struct {
	config   cfv1alpha1.SpaceBuildConfig
	problems []problem
}

func (r *resolution) fail(reason, format string, args ...any) {
	r.problems = append(r.problems, problem{reason: reason, message: fmt.Sprintf(format, args...)})
}

// resolve computes a space's build configuration, the nearest level winning, and checks it.
func resolve(in inputs) resolution {
	var r resolution
	r.checkPropagation(in)
	held := credentialsIn(in.ancestry, in.secrets)
	credentials := r.resolveCredentials(held)
	repositoryRegistry := r.resolveDropletRepository(in, credentials)
	sa := r.resolveServiceAccount(in)
	r.checkFirstListed(in, sa, held)
	r.resolveBuilder(in)

	space := in.ancestry.namespace
	if len(credentials) == 0 {
		r.fail(cfv1alpha1.RegistryCredentialsMissingReason,
			"no build-config Secret in %s or above holds registry credentials", space)
	}
	if repositoryRegistry == "" {
		return r
	}
	cred, ok := credentials[repositoryRegistry]
	if !ok && len(credentials) > 0 {
		r.fail(cfv1alpha1.RegistryCredentialsMissingReason,
			"no build-config Secret in %s or above holds credentials for %s", space, repositoryRegistry)
		return r
	}
	if ok && sa != nil && !slices.ContainsFunc(sa.Secrets, func(ref corev1.ObjectReference) bool { return ref.Name == cred.name }) {
		r.fail(cfv1alpha1.CredentialsNotOnServiceAccountReason,
			"ServiceAccount %s (from %s) does not list Secret %s (from %s), which holds the credentials for %s; label a ServiceAccount in %s so that cf-hnc fills it in",
			sa.Name, r.config.ServiceAccount.From, cred.name, cred.from, repositoryRegistry, cred.from)
	}
	return r
}

// checkPropagation reports what was placed above the space and has not reached it.
func (r *resolution) checkPropagation(in inputs) {
	for _, u := range in.unpropagated {
		switch {
		case u.conflicting:
			r.fail(cfv1alpha1.BuildConfigNameConflictReason,
				"%s %s in %s has the name of the %s placed in %s, so HNC does not propagate that one; an operator must rename or remove this space's %s",
				u.kind, u.name, in.ancestry.namespace, u.kind, u.from, u.kind)
		case u.blocked != "":
			r.fail(cfv1alpha1.PropagationBlockedReason, "HNC refuses to propagate %s %s from %s: %s", u.kind, u.name, u.from, u.blocked)
		default:
			r.fail(cfv1alpha1.PropagationPendingReason, "%s %s placed in %s has not reached %s yet", u.kind, u.name, u.from, in.ancestry.namespace)
		}
	}
}

// resolveCredentials reports the Secrets that cannot be used and two of one level for one
// registry host, and returns the winning Secret per registry host.
func (r *resolution) resolveCredentials(held heldCredentials) map[string]placed {
	for _, p := range held.invalid {
		r.fail(cfv1alpha1.InvalidDockerConfigReason, "Secret %s (from %s): %v", p.name, p.from, p.err)
	}
	for _, host := range sortedKeys(held.winners) {
		best := held.winners[host]
		if len(best) > 1 {
			r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Secrets %s (from %s) both hold credentials for %s",
				names(best), best[0].from, host)
		}
		r.config.RegistryCredentials = append(r.config.RegistryCredentials, cfv1alpha1.RegistryCredential{
			Registry: host, Secret: cfv1alpha1.PlacedObject{Name: best[0].name, From: best[0].from},
		})
	}
	return firsts(held.winners)
}

// invalidSecret is a credential Secret that cannot be used, and why.
type invalidSecret struct {
	placed
	err error
}

// heldCredentials are the credential Secrets of a namespace: which registry hosts each holds
// credentials for, and which win.
type heldCredentials struct {
	// winners are, for each registry host, the nearest Secrets that hold credentials for it
	// (more than one when a level has two).
	winners map[string][]placed
	// hosts are the registry hosts that each usable Secret holds credentials for, by name.
	hosts map[string][]string
	// invalid are the Secrets that are not usable.
	invalid []invalidSecret
}

func credentialsIn(a ancestry, secrets []corev1.Secret) heldCredentials {
	held := heldCredentials{winners: map[string][]placed{}, hosts: map[string][]string{}}
	byRegistry := map[string][]placed{}
	for i := range secrets {
		p := a.place(&secrets[i])
		creds, err := dockerconfig.Parse(&secrets[i])
		if err != nil {
			held.invalid = append(held.invalid, invalidSecret{placed: p, err: err})
			continue
		}
		for host := range creds {
			byRegistry[host] = append(byRegistry[host], p)
		}
		held.hosts[p.name] = sortedKeys(creds)
	}
	for host, candidates := range byRegistry {
		held.winners[host] = nearest(candidates)
	}
	return held
}

// firstListed is the Secret that builds use for a registry host, of those a ServiceAccount lists
// (names, in its order): kpack v0.18.0 takes one credential per registry host, from the first
// Secret listed that holds credentials for it (its controller reading the builder image, and
// build-init, the lifecycle's phases and the rebase in the pod: `secrets` first, then
// `imagePullSecrets`), and never tries the next one. "" when none of those known holds it.
func (held heldCredentials) firstListed(names []string, host string) string {
	for _, name := range names {
		if slices.Contains(held.hosts[name], host) {
			return name
		}
	}
	return ""
}

// ServiceAccountCredentials returns the names of the credential Secrets that a build
// ServiceAccount in a namespace must list: the one that wins for each registry, each before any
// other listed that also holds credentials for a registry it wins, since kpack uses the first
// listed for a registry (firstListed); then, by name, those whose docker config cannot be used.
// A Secret broken and then fixed (a rotation gone wrong) so stays listed, and its fix reaches
// the spaces with HNC's copies of the Secret alone, not the ServiceAccount's copies again after
// them. Builds wait meanwhile: the spaces report InvalidDockerConfig.
func ServiceAccountCredentials(ns *corev1.Namespace, secrets []corev1.Secret) []string {
	held := credentialsIn(ancestryOf(ns), secrets)
	list := held.winnersFirst()
	var broken []string
	for _, p := range held.invalid {
		if !slices.Contains(list, p.name) && !slices.Contains(broken, p.name) {
			broken = append(broken, p.name)
		}
	}
	slices.Sort(broken)
	return append(list, broken...)
}

// winnersFirst lists the winning Secrets in the order of the first registry each wins, moving a
// Secret that also holds credentials for a registry that another wins after that one: a root
// Secret with credentials for both the builder images' registry and the droplets' must not come
// before the org's for the droplets'. Such an order exists unless two Secrets of one level hold
// credentials for one registry, which the spaces report as ambiguous; a Secret that wins one
// registry over another Secret wins every registry they share.
func (held heldCredentials) winnersFirst() []string {
	var pending []string
	for _, host := range sortedKeys(held.winners) {
		if name := held.winners[host][0].name; !slices.Contains(pending, name) {
			pending = append(pending, name)
		}
	}
	shadows := func(name string) bool {
		for _, host := range held.hosts[name] {
			if winner := held.winners[host][0].name; winner != name && slices.Contains(pending, winner) {
				return true
			}
		}
		return false
	}
	list := make([]string, 0, len(pending))
	for len(pending) > 0 {
		next := max(slices.IndexFunc(pending, func(name string) bool { return !shadows(name) }), 0)
		list = append(list, pending[next])
		pending = slices.Delete(pending, next, next+1)
	}
	return list
}

func firsts(m map[string][]placed) map[string]placed {
	out := make(map[string]placed, len(m))
	for k, v := range m {
		out[k] = v[0]
	}
	return out
}

// resolveDropletRepository sets the space's droplet repository and returns its registry host.
// A repository placed at an org or the root gives every space below a path of its own below it
// (the namespaces below that level). A space's own Secret, which only an operator places
// (config/policies), may give the space another: one within that path (it narrows it), or one
// outside every repository placed above, which the space's builds push to with credentials of
// the space's own (checkOwnRepository).
func (r *resolution) resolveDropletRepository(in inputs, credentials map[string]placed) string {
	var placedAbove, placedHere []placed
	var repositoriesAbove []string
	prefixes := map[placed]string{}
	for i := range in.secrets {
		prefix, ok := in.secrets[i].Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation]
		if !ok {
			continue
		}
		p := in.ancestry.place(&in.secrets[i])
		prefixes[p] = prefix
		if p.level == 0 {
			placedHere = append(placedHere, p)
		} else {
			placedAbove = append(placedAbove, p)
			repositoriesAbove = append(repositoriesAbove, prefix)
		}
	}
	var spaceRepository string
	best := nearest(placedAbove)
	if len(best) > 0 {
		r.checkSingle(best)
		spaceRepository = cfv1alpha1.SpaceRepository(prefixes[best[0]], in.ancestry.below(best[0].from))
	}
	own := nearest(placedHere)
	if len(own) == 0 && len(best) == 0 {
		r.fail(cfv1alpha1.DropletRepositoryMissingReason, "no build-config Secret in %s or above has the annotation %s",
			in.ancestry.namespace, cfv1alpha1.DropletRepositoryPrefixAnnotation)
		return ""
	}
	chosen, repository := best, spaceRepository
	if len(own) > 0 {
		r.checkSingle(own)
		chosen, repository = own, strings.TrimSuffix(prefixes[own[0]], "/")
	}
	repo, err := name.NewRepository(repository, name.WeakValidation)
	if err != nil {
		r.fail(cfv1alpha1.InvalidDropletRepositoryReason, "Secret %s (from %s): droplet repository %q: %v",
			chosen[0].name, chosen[0].from, repository, err)
		return ""
	}
	if len(own) > 0 && !r.checkOwnRepository(own[0], repository, spaceRepository, repositoriesAbove, credentials[repo.RegistryStr()]) {
		return ""
	}
	r.config.DropletRepositoryPrefix = repository
	return repo.RegistryStr()
}

// checkSingle reports two Secrets of one level that both set the droplet repository.
func (r *resolution) checkSingle(level []placed) {
	if len(level) > 1 {
		r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Secrets %s (from %s) both set the droplet repository",
			names(level), level[0].from)
	}
}

// checkOwnRepository says whether the space may use repository, which its own Secret sets. Within
// spaceRepository, the space's path below a repository placed above it, it narrows the path. Any
// other repository must lie outside every repository placed above (their credentials reach
// everything below them from every space below), and the space's builds must push to it with
// credentials of the space's own (cred, those that win for its host), never with credentials
// placed above for other repositories.
func (r *resolution) checkOwnRepository(own placed, repository, spaceRepository string, repositoriesAbove []string, cred placed) bool {
	if spaceRepository != "" && cfv1alpha1.WithinRepository(repository, spaceRepository) {
		return true
	}
	if enclosing := cfv1alpha1.EnclosingRepository(repository, repositoriesAbove); enclosing != "" {
		r.fail(cfv1alpha1.InvalidDropletRepositoryReason,
			"Secret %s (from %s): droplet repository %q lies within %q, placed above the space, whose credentials reach it from every space below; a space may only narrow its own repository %q there, or have one outside %q",
			own.name, own.from, repository, enclosing, spaceRepository, enclosing)
		return false
	}
	if cred.name != "" && cred.level != 0 {
		r.fail(cfv1alpha1.InvalidDropletRepositoryReason,
			"Secret %s (from %s): droplet repository %q is the space's own, outside the repositories placed above it, so the space's builds must push there with credentials of the space's own, but those for its registry are Secret %s (from %s); put credentials for that registry in a build-config Secret of %s",
			own.name, own.from, repository, cred.name, cred.from, own.from)
		return false
	}
	return true
}

// resolveServiceAccount sets the build ServiceAccount and checks the Secrets it names.
func (r *resolution) resolveServiceAccount(in inputs) *corev1.ServiceAccount {
	var candidates []placed
	for i := range in.serviceAccounts {
		candidates = append(candidates, in.ancestry.place(&in.serviceAccounts[i]))
	}
	best := nearest(candidates)
	if len(best) == 0 {
		r.fail(cfv1alpha1.ServiceAccountMissingReason,
			"no ServiceAccount labelled %s in %s or above", cfv1alpha1.BuildConfigLabel, in.ancestry.namespace)
		return nil
	}
	if len(best) > 1 {
		r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "ServiceAccounts %s (from %s) are both build ServiceAccounts",
			names(best), best[0].from)
	}
	r.config.ServiceAccount = &cfv1alpha1.PlacedObject{Name: best[0].name, From: best[0].from}
	sa := &in.serviceAccounts[slices.IndexFunc(in.serviceAccounts, func(sa corev1.ServiceAccount) bool {
		return sa.Name == best[0].name
	})]
	var missing []string
	for _, name := range ReferencedSecrets(sa) {
		if in.missingSecrets[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		r.fail(cfv1alpha1.ServiceAccountSecretMissingReason, "ServiceAccount %s (from %s) names Secrets that do not exist in %s: %s",
			sa.Name, best[0].from, in.ancestry.namespace, strings.Join(missing, ", "))
	}
	return sa
}

// checkFirstListed reports a registry host for which the build ServiceAccount lists the winning
// Secret after another that also holds credentials for it: builds would use that other one
// (firstListed).
func (r *resolution) checkFirstListed(in inputs, sa *corev1.ServiceAccount, held heldCredentials) {
	if sa == nil {
		return
	}
	listed := ReferencedSecrets(sa)
	for _, host := range sortedKeys(held.winners) {
		winner := held.winners[host][0]
		first := held.firstListed(listed, host)
		if first == "" || first == winner.name || !slices.Contains(listed, winner.name) {
			continue
		}
		shadowing := in.ancestry.place(&in.secrets[slices.IndexFunc(in.secrets, func(s corev1.Secret) bool { return s.Name == first })])
		r.fail(cfv1alpha1.CredentialsNotOnServiceAccountReason,
			"ServiceAccount %s (from %s) lists Secret %s (from %s) before Secret %s (from %s), and both hold credentials for %s: kpack builds with the first one a ServiceAccount lists for a registry, so builds would use %s, not %s, which wins for %s; take %s off the ServiceAccount, or its credentials for %s out of it",
			sa.Name, r.config.ServiceAccount.From, first, shadowing.from, winner.name, winner.from, host, first, winner.name, host, first, host)
	}
}

// resolveBuilder sets the default Builder and checks that what builds use is ready: the space's
// own Builder, or the ClusterBuilder that cf-hnc makes from one placed above.
func (r *resolution) resolveBuilder(in inputs) {
	candidates := make([]placed, len(in.builders))
	for i, c := range in.builders {
		candidates[i] = in.ancestry.placeIn(c.builder.Name, c.builder.Namespace)
	}
	best := nearest(candidates)
	if len(best) == 0 {
		r.fail(cfv1alpha1.BuilderMissingReason,
			"no kpack Builder labelled %s in %s or above", cfv1alpha1.BuildConfigLabel, in.ancestry.namespace)
		return
	}
	if len(best) > 1 {
		r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Builders %s (from %s) are both default Builders",
			names(best), best[0].from)
	}
	chosen := in.builders[slices.IndexFunc(in.builders, func(c builderCandidate) bool {
		return c.builder.Name == best[0].name && c.builder.Namespace == best[0].from
	})]
	placedBuilder := &cfv1alpha1.PlacedBuilder{PlacedObject: cfv1alpha1.PlacedObject{Name: best[0].name, From: best[0].from}}
	r.config.Builder = placedBuilder
	if best[0].level == 0 {
		placedBuilder.LatestImage = chosen.builder.Status.LatestImage
		if !Ready(&chosen.builder.Status, chosen.builder.Generation) {
			r.fail(cfv1alpha1.BuilderNotReadyReason, "Builder %s (from %s) is not ready: %s",
				best[0].name, best[0].from, notReadyReason(&chosen.builder.Status, chosen.builder.Generation))
		}
		return
	}
	placedBuilder.ClusterBuilder = ClusterBuilderName(best[0].from, best[0].name)
	cb := chosen.clusterBuilder
	switch {
	case cb == nil:
		r.fail(cfv1alpha1.BuilderNotReadyReason, "Builder %s (from %s) is not ready: cf-hnc has not made ClusterBuilder %s from it yet",
			best[0].name, best[0].from, placedBuilder.ClusterBuilder)
	case !Ready(&cb.Status, cb.Generation):
		r.fail(cfv1alpha1.BuilderNotReadyReason, "Builder %s (from %s) is not ready: ClusterBuilder %s: %s",
			best[0].name, best[0].from, cb.Name, notReadyReason(&cb.Status, cb.Generation))
	default:
		placedBuilder.LatestImage = cb.Status.LatestImage
	}
}

// reasonPriority orders BuildReady reasons: the condition's reason is the first that applies.
// What needs an operator comes first, then what is invalid, then what has yet to arrive.
var reasonPriority = []string{
	cfv1alpha1.BuildConfigNameConflictReason,
	cfv1alpha1.PropagationBlockedReason,
	cfv1alpha1.InvalidDockerConfigReason,
	cfv1alpha1.InvalidDropletRepositoryReason,
	cfv1alpha1.AmbiguousBuildConfigReason,
	cfv1alpha1.PropagationPendingReason,
	cfv1alpha1.RegistryCredentialsMissingReason,
	cfv1alpha1.DropletRepositoryMissingReason,
	cfv1alpha1.ServiceAccountMissingReason,
	cfv1alpha1.ServiceAccountSecretMissingReason,
	cfv1alpha1.CredentialsNotOnServiceAccountReason,
	cfv1alpha1.BuilderMissingReason,
	cfv1alpha1.BuilderNotReadyReason,
}

// condition is the BuildReady condition of a resolution: the most important problem's reason,
// every problem's message, most important first.
func (r resolution) condition() metav1.Condition {
	slices.SortStableFunc(r.problems, func(a, b problem) int {
		return cmp.Compare(slices.Index(reasonPriority, a.reason), slices.Index(reasonPriority, b.reason))
	})
	if len(r.problems) == 0 {
		return metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionTrue,
			Reason: cfv1alpha1.BuildConfigCompleteReason, Message: "credentials, ServiceAccount, Builder and droplet repository are in place"}
	}
	messages := make([]string, len(r.problems))
	for i, p := range r.problems {
		messages[i] = p.message
	}
	return metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse,
		Reason: r.problems[0].reason, Message: strings.Join(messages, "; ")}
}

// ReferencedSecrets returns the names of the Secrets a ServiceAccount lists.
func ReferencedSecrets(sa *corev1.ServiceAccount) []string {
	var refs []string
	for _, s := range sa.Secrets {
		refs = append(refs, s.Name)
	}
	for _, s := range sa.ImagePullSecrets {
		if !slices.Contains(refs, s.Name) {
			refs = append(refs, s.Name)
		}
	}
	return refs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
