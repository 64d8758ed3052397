package propagation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
)

// buildInputs is everything in one namespace that the build configuration is resolved from.
type buildInputs struct {
	namespace       *corev1.Namespace
	secrets         []corev1.Secret
	serviceAccounts []corev1.ServiceAccount
	builders        []kpackv1alpha2.Builder
	// missingSecrets are the Secrets that a build-config ServiceAccount names but that do not
	// exist in the namespace.
	missingSecrets map[string]bool
}

// problem is one reason why a space cannot build.
type problem struct {
	reason  string
	message string
}

// placed is an object and where it was placed, as seen from the namespace being resolved.
type placed struct {
	name  string
	from  string
	level int
}

// unknownLevel ranks objects whose source is not an ancestor (HNC would not have copied them)
// below every real level.
const unknownLevel = 1 << 20

// place says where an object in ns was placed: in ns itself (level 0) or, for an HNC copy, in
// the ancestor it was copied from, at that ancestor's depth above ns.
func place(ns *corev1.Namespace, obj metav1.Object) placed {
	from, copied := obj.GetLabels()[hncv1alpha2.LabelInheritedFrom]
	if !copied {
		return placed{name: obj.GetName(), from: ns.Name, level: 0}
	}
	level := unknownLevel
	if depth, ok := ns.Labels[from+hncv1alpha2.LabelTreeDepthSuffix]; ok {
		fmt.Sscanf(depth, "%d", &level)
	}
	return placed{name: obj.GetName(), from: from, level: level}
}

// nearest returns the candidates at the lowest level; more than one means the operator placed
// two of a kind at the same level.
func nearest(candidates []placed) []placed {
	if len(candidates) == 0 {
		return nil
	}
	slices.SortFunc(candidates, func(a, b placed) int {
		return cmp.Or(cmp.Compare(a.level, b.level), strings.Compare(a.name, b.name))
	})
	n := 1
	for n < len(candidates) && candidates[n].level == candidates[0].level {
		n++
	}
	return candidates[:n]
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
func resolve(in buildInputs) resolution {
	var r resolution
	credentials := r.resolveCredentials(in)
	prefixRegistry := r.resolveDropletRepository(in)
	sa := r.resolveServiceAccount(in)
	r.resolveBuilder(in)

	if len(credentials) == 0 {
		r.fail(cfv1alpha1.RegistryCredentialsMissingReason,
			"no build-config Secret in %s or above holds registry credentials", in.namespace.Name)
	}
	if prefixRegistry == "" {
		return r
	}
	cred, ok := credentials[prefixRegistry]
	if !ok && len(credentials) > 0 {
		r.fail(cfv1alpha1.RegistryCredentialsMissingReason,
			"no build-config Secret in %s or above holds credentials for %s", in.namespace.Name, prefixRegistry)
		return r
	}
	if ok && sa != nil && !slices.ContainsFunc(sa.Secrets, func(ref corev1.ObjectReference) bool { return ref.Name == cred.name }) {
		r.fail(cfv1alpha1.CredentialsNotOnServiceAccountReason,
			"ServiceAccount %s (from %s) does not list Secret %s (from %s), which holds the credentials for %s; label a ServiceAccount in %s so that cf-hnc fills it in",
			sa.Name, r.config.ServiceAccount.From, cred.name, cred.from, prefixRegistry, cred.from)
	}
	return r
}

// resolveCredentials validates every build-config Secret and returns the winning Secret per
// registry host.
func (r *resolution) resolveCredentials(in buildInputs) map[string]placed {
	byRegistry := map[string][]placed{}
	for i := range in.secrets {
		secret := &in.secrets[i]
		p := place(in.namespace, secret)
		hosts, err := registries(secret)
		if err != nil {
			r.fail(cfv1alpha1.InvalidDockerConfigReason, "Secret %s (from %s): %v", p.name, p.from, err)
			continue
		}
		for _, host := range hosts {
			byRegistry[host] = append(byRegistry[host], p)
		}
	}
	winners := map[string]placed{}
	for _, host := range sortedKeys(byRegistry) {
		best := nearest(byRegistry[host])
		if len(best) > 1 {
			r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Secrets %s (from %s) both hold credentials for %s",
				names(best), best[0].from, host)
		}
		winners[host] = best[0]
		r.config.RegistryCredentials = append(r.config.RegistryCredentials, cfv1alpha1.RegistryCredential{
			Registry: host, Secret: cfv1alpha1.PlacedObject{Name: best[0].name, From: best[0].from},
		})
	}
	return winners
}

// resolveDropletRepository sets the droplet repository prefix and returns its registry host.
func (r *resolution) resolveDropletRepository(in buildInputs) string {
	var candidates []placed
	prefixes := map[string]string{}
	for i := range in.secrets {
		if prefix, ok := in.secrets[i].Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation]; ok {
			p := place(in.namespace, &in.secrets[i])
			candidates = append(candidates, p)
			prefixes[p.name] = prefix
		}
	}
	best := nearest(candidates)
	if len(best) == 0 {
		r.fail(cfv1alpha1.DropletRepositoryMissingReason,
			"no build-config Secret in %s or above has the annotation %s", in.namespace.Name, cfv1alpha1.DropletRepositoryPrefixAnnotation)
		return ""
	}
	if len(best) > 1 {
		r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Secrets %s (from %s) both set the droplet repository",
			names(best), best[0].from)
	}
	prefix := strings.TrimSuffix(prefixes[best[0].name], "/")
	repo, err := name.NewRepository(prefix, name.WeakValidation)
	if err != nil {
		r.fail(cfv1alpha1.InvalidDropletRepositoryReason, "Secret %s (from %s): droplet repository %q: %v",
			best[0].name, best[0].from, prefix, err)
		return ""
	}
	r.config.DropletRepositoryPrefix = prefix
	return repo.RegistryStr()
}

// resolveServiceAccount sets the build ServiceAccount and checks the Secrets it names.
func (r *resolution) resolveServiceAccount(in buildInputs) *corev1.ServiceAccount {
	var candidates []placed
	for i := range in.serviceAccounts {
		candidates = append(candidates, place(in.namespace, &in.serviceAccounts[i]))
	}
	best := nearest(candidates)
	if len(best) == 0 {
		r.fail(cfv1alpha1.ServiceAccountMissingReason,
			"no ServiceAccount labelled %s in %s or above", cfv1alpha1.BuildConfigLabel, in.namespace.Name)
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
	for _, name := range referencedSecrets(sa) {
		if in.missingSecrets[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		r.fail(cfv1alpha1.ServiceAccountSecretMissingReason, "ServiceAccount %s (from %s) names Secrets that do not exist in %s: %s",
			sa.Name, best[0].from, in.namespace.Name, strings.Join(missing, ", "))
	}
	return sa
}

// resolveBuilder sets the default Builder and checks that it is ready at its generation.
func (r *resolution) resolveBuilder(in buildInputs) {
	var candidates []placed
	for i := range in.builders {
		candidates = append(candidates, place(in.namespace, &in.builders[i]))
	}
	best := nearest(candidates)
	if len(best) == 0 {
		r.fail(cfv1alpha1.BuilderMissingReason,
			"no kpack Builder labelled %s in %s or above", cfv1alpha1.BuildConfigLabel, in.namespace.Name)
		return
	}
	if len(best) > 1 {
		r.fail(cfv1alpha1.AmbiguousBuildConfigReason, "Builders %s (from %s) are both default Builders",
			names(best), best[0].from)
	}
	builder := &in.builders[slices.IndexFunc(in.builders, func(b kpackv1alpha2.Builder) bool { return b.Name == best[0].name })]
	r.config.Builder = &cfv1alpha1.PlacedBuilder{
		PlacedObject: cfv1alpha1.PlacedObject{Name: builder.Name, From: best[0].from},
		LatestImage:  builder.Status.LatestImage,
	}
	if !BuilderReady(builder) {
		reason := "it has not been reconciled yet"
		if c := builder.Status.GetCondition(corev1alpha1.ConditionReady); c != nil && c.Message != "" {
			reason = c.Message
		}
		r.fail(cfv1alpha1.BuilderNotReadyReason, "Builder %s (from %s) is not ready: %s", builder.Name, best[0].from, reason)
	}
}

// BuilderReady says whether kpack reports a Builder Ready for its current generation.
func BuilderReady(b *kpackv1alpha2.Builder) bool {
	return b.Status.GetCondition(corev1alpha1.ConditionReady).IsTrue() && b.Status.ObservedGeneration == b.Generation
}

// reasonPriority orders BuildReady reasons: the condition's reason is the first that applies.
var reasonPriority = []string{
	cfv1alpha1.InvalidDockerConfigReason,
	cfv1alpha1.RegistryCredentialsMissingReason,
	cfv1alpha1.DropletRepositoryMissingReason,
	cfv1alpha1.InvalidDropletRepositoryReason,
	cfv1alpha1.AmbiguousBuildConfigReason,
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

// registries returns the registry hosts a credential Secret holds credentials for, or why it
// is not usable.
func registries(secret *corev1.Secret) ([]string, error) {
	creds, err := dockerconfig.Parse(secret)
	if err != nil {
		return nil, err
	}
	return sortedKeys(creds), nil
}

// referencedSecrets returns the names of the Secrets a ServiceAccount lists.
func referencedSecrets(sa *corev1.ServiceAccount) []string {
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

func names(ps []placed) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
