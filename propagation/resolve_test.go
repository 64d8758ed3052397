package propagation

import (
	"encoding/base64"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The tree of these cases: root "cf", org "org", space "space".
var spaceNS = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "space", Labels: map[string]string{
	"space" + hncv1alpha2.LabelTreeDepthSuffix: "0",
	"org" + hncv1alpha2.LabelTreeDepthSuffix:   "1",
	"cf" + hncv1alpha2.LabelTreeDepthSuffix:    "2",
}}}

// from makes an object a copy from an ancestor, as HNC labels it; "space" leaves it the
// space's own.
func from(level string, meta metav1.ObjectMeta) metav1.ObjectMeta {
	meta.Namespace = "space"
	if level != "space" {
		meta.Labels = map[string]string{hncv1alpha2.LabelInheritedFrom: level}
	}
	return meta
}

func dockerConfigJSON(registry string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte("user:secret"))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, registry, auth))
}

func credentials(level, name, registry, prefix string) corev1.Secret {
	s := corev1.Secret{
		ObjectMeta: from(level, metav1.ObjectMeta{Name: name}),
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON(registry)},
	}
	if prefix != "" {
		s.Annotations = map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: prefix}
	}
	return s
}

func serviceAccount(level, name string, secrets ...string) corev1.ServiceAccount {
	sa := corev1.ServiceAccount{ObjectMeta: from(level, metav1.ObjectMeta{Name: name})}
	for _, s := range secrets {
		sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: s})
	}
	return sa
}

func builder(level, name string, ready bool, observed int64) kpackv1alpha2.Builder {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	b := kpackv1alpha2.Builder{ObjectMeta: from(level, metav1.ObjectMeta{Name: name, Generation: 2})}
	b.Status.ObservedGeneration = observed
	b.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionReady, Status: status, Message: "stack not ready"}}
	b.Status.LatestImage = "registry.local/builders/" + name + "@sha256:abc"
	return b
}

// orgSetup is the once-per-org placement: credentials with the droplet repository, the build
// ServiceAccount listing them, a ready Builder.
func orgSetup() buildInputs {
	return buildInputs{
		namespace:       spaceNS,
		secrets:         []corev1.Secret{credentials("org", "org-registry", "registry.local", "registry.local/org")},
		serviceAccounts: []corev1.ServiceAccount{serviceAccount("org", "org-build", "org-registry")},
		builders:        []kpackv1alpha2.Builder{builder("org", "org-builder", true, 2)},
	}
}

var _ = Describe("resolving a space's build configuration", func() {
	It("takes everything placed once in the org", func() {
		r := resolve(orgSetup())
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config).To(Equal(cfv1alpha1.SpaceBuildConfig{
			DropletRepositoryPrefix: "registry.local/org",
			RegistryCredentials: []cfv1alpha1.RegistryCredential{
				{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "org-registry", From: "org"}},
			},
			ServiceAccount: &cfv1alpha1.PlacedObject{Name: "org-build", From: "org"},
			Builder: &cfv1alpha1.PlacedBuilder{
				PlacedObject: cfv1alpha1.PlacedObject{Name: "org-builder", From: "org"},
				LatestImage:  "registry.local/builders/org-builder@sha256:abc",
			},
		}))
	})

	It("lets the nearest level win: the space over the org over the root", func() {
		in := orgSetup()
		in.secrets = append(in.secrets,
			credentials("cf", "root-registry", "registry.local", "registry.local/root"),
			credentials("cf", "root-hub", "https://index.docker.io/v1/", ""),
			credentials("space", "space-registry", "registry.local", "registry.local/space"))
		in.serviceAccounts = append(in.serviceAccounts, serviceAccount("space", "space-build", "space-registry", "root-hub"))
		in.builders = append(in.builders, builder("cf", "root-builder", true, 2))
		r := resolve(in)
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config.DropletRepositoryPrefix).To(Equal("registry.local/space"))
		Expect(r.config.RegistryCredentials).To(ConsistOf(
			cfv1alpha1.RegistryCredential{Registry: "index.docker.io", Secret: cfv1alpha1.PlacedObject{Name: "root-hub", From: "cf"}},
			cfv1alpha1.RegistryCredential{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: "space"}},
		))
		Expect(r.config.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "space-build", From: "space"}))
		Expect(r.config.Builder.Name).To(Equal("org-builder"))
	})

	It("takes the droplet repository from the root when no org sets one", func() {
		in := orgSetup()
		in.secrets[0].Annotations = nil
		in.secrets = append(in.secrets, credentials("cf", "root-registry", "registry.local", "registry.local/all-orgs"))
		r := resolve(in)
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config.DropletRepositoryPrefix).To(Equal("registry.local/all-orgs"))
		Expect(r.config.RegistryCredentials[0].Secret.Name).To(Equal("org-registry"))
	})

	DescribeTable("says precisely what is missing or wrong",
		func(change func(*buildInputs), reason string, message string) {
			in := orgSetup()
			change(&in)
			c := resolve(in).condition()
			Expect(c.Status).To(Equal(metav1.ConditionFalse))
			Expect(c.Reason).To(Equal(reason))
			Expect(c.Message).To(ContainSubstring(message))
		},
		Entry("no credentials at all", func(in *buildInputs) { in.secrets = nil },
			cfv1alpha1.RegistryCredentialsMissingReason, "no build-config Secret in space or above holds registry credentials"),
		Entry("credentials for another registry than the droplets'", func(in *buildInputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = dockerConfigJSON("other.local")
		}, cfv1alpha1.RegistryCredentialsMissingReason, "holds credentials for registry.local"),
		Entry("no droplet repository", func(in *buildInputs) { in.secrets[0].Annotations = nil },
			cfv1alpha1.DropletRepositoryMissingReason, cfv1alpha1.DropletRepositoryPrefixAnnotation),
		Entry("a droplet repository that is no repository", func(in *buildInputs) {
			in.secrets[0].Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation] = "Registry.Local/UPPER"
		}, cfv1alpha1.InvalidDropletRepositoryReason, `droplet repository "Registry.Local/UPPER"`),
		Entry("a docker config without auths", func(in *buildInputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"credsStore":"desktop"}`)
		}, cfv1alpha1.InvalidDockerConfigReason, `Secret org-registry (from org): .dockerconfigjson has no registries under "auths"`),
		Entry("a docker config that is no JSON", func(in *buildInputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":`)
		}, cfv1alpha1.InvalidDockerConfigReason, "is not a docker config"),
		Entry("an auth that is not base64 of user:password", func(in *buildInputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.local":{"auth":"bm9jb2xvbg=="}}}`)
		}, cfv1alpha1.InvalidDockerConfigReason, "must be formatted as base64(username:password)"),
		Entry("a registry entry without credentials", func(in *buildInputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.local":{}}}`)
		}, cfv1alpha1.InvalidDockerConfigReason, "no credentials"),
		Entry("an Opaque Secret", func(in *buildInputs) { in.secrets[0].Type = corev1.SecretTypeOpaque },
			cfv1alpha1.InvalidDockerConfigReason, `type is "Opaque"`),
		Entry("no build ServiceAccount", func(in *buildInputs) { in.serviceAccounts = nil },
			cfv1alpha1.ServiceAccountMissingReason, "no ServiceAccount labelled"),
		Entry("a ServiceAccount naming a Secret that does not exist", func(in *buildInputs) {
			in.serviceAccounts[0].ImagePullSecrets = []corev1.LocalObjectReference{{Name: "gone"}}
			in.missingSecrets = map[string]bool{"gone": true}
		}, cfv1alpha1.ServiceAccountSecretMissingReason, "ServiceAccount org-build (from org) names Secrets that do not exist in space: gone"),
		Entry("space credentials that the org's ServiceAccount does not list", func(in *buildInputs) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", "registry.local", ""))
		}, cfv1alpha1.CredentialsNotOnServiceAccountReason, "does not list Secret space-registry (from space)"),
		Entry("two build ServiceAccounts in the org", func(in *buildInputs) {
			in.serviceAccounts = append(in.serviceAccounts, serviceAccount("org", "another", "org-registry"))
		}, cfv1alpha1.AmbiguousBuildConfigReason, "ServiceAccounts another, org-build (from org)"),
		Entry("no Builder", func(in *buildInputs) { in.builders = nil },
			cfv1alpha1.BuilderMissingReason, "no kpack Builder labelled"),
		Entry("a Builder that is not ready", func(in *buildInputs) { in.builders[0] = builder("org", "org-builder", false, 2) },
			cfv1alpha1.BuilderNotReadyReason, "Builder org-builder (from org) is not ready: stack not ready"),
		Entry("a Builder ready only for its previous generation", func(in *buildInputs) { in.builders[0] = builder("org", "org-builder", true, 1) },
			cfv1alpha1.BuilderNotReadyReason, "Builder org-builder (from org) is not ready"),
	)

	It("names every problem, the most important first", func() {
		in := orgSetup()
		in.builders = nil
		in.secrets[0].Type = corev1.SecretTypeOpaque
		c := resolve(in).condition()
		Expect(c.Reason).To(Equal(cfv1alpha1.InvalidDockerConfigReason))
		Expect(c.Message).To(And(ContainSubstring(`type is "Opaque"`), ContainSubstring("no kpack Builder")))
	})
})
