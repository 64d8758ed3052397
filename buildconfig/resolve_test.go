package buildconfig

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func TestBuildConfig(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "buildconfig (unit)")
}

// The tree of these cases: root "cf", org "org", space "space".
var spaceNS = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "space", Labels: map[string]string{
	"space" + hncv1alpha2.LabelTreeDepthSuffix: "0",
	"org" + hncv1alpha2.LabelTreeDepthSuffix:   "1",
	"cf" + hncv1alpha2.LabelTreeDepthSuffix:    "2",
}}}

// from makes an object in the space a copy from an ancestor, as HNC labels it; "space" leaves
// it the space's own.
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

func builderStatus(ready bool, observed int64, image string) kpackv1alpha2.BuilderStatus {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	s := kpackv1alpha2.BuilderStatus{LatestImage: image}
	s.ObservedGeneration = observed
	s.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionReady, Status: status, Message: "stack not ready"}}
	return s
}

// placedBuilder is a default Builder placed in a namespace; placed above the space, it comes
// with the ClusterBuilder cf-hnc made from it.
func placedBuilder(namespace, name string, ready bool) builderCandidate {
	b := &kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 2}}
	if namespace == "space" {
		b.Status = builderStatus(ready, 2, "registry.local/builders/"+name+"@sha256:abc")
		return builderCandidate{builder: b}
	}
	b.Status = builderStatus(true, 2, "registry.local/builders/"+name+"@sha256:abc")
	cb := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: ClusterBuilderName(namespace, name), Generation: 3}}
	cb.Status = builderStatus(ready, 3, "registry.local/builders/cluster@sha256:def")
	return builderCandidate{builder: b, clusterBuilder: cb}
}

// orgSetup is the once-per-org placement: credentials with the droplet repository, the build
// ServiceAccount listing them, a ready Builder.
func orgSetup() inputs {
	return inputs{
		ancestry:        ancestryOf(spaceNS),
		secrets:         []corev1.Secret{credentials("org", "org-registry", "registry.local", "registry.local/org")},
		serviceAccounts: []corev1.ServiceAccount{serviceAccount("org", "org-build", "org-registry")},
		builders:        []builderCandidate{placedBuilder("org", "org-builder", true)},
	}
}

var _ = Describe("resolving a space's build configuration", func() {
	It("takes everything placed once in the org, and gives the space a repository of its own", func() {
		r := resolve(orgSetup())
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config).To(Equal(cfv1alpha1.SpaceBuildConfig{
			DropletRepositoryPrefix: "registry.local/org/space",
			RegistryCredentials: []cfv1alpha1.RegistryCredential{
				{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "org-registry", From: "org"}},
			},
			ServiceAccount: &cfv1alpha1.PlacedObject{Name: "org-build", From: "org"},
			Builder: &cfv1alpha1.PlacedBuilder{
				PlacedObject:   cfv1alpha1.PlacedObject{Name: "org-builder", From: "org"},
				ClusterBuilder: "org.org-builder",
				LatestImage:    "registry.local/builders/cluster@sha256:def",
			},
		}))
	})

	It("lets the nearest level win: the space over the org over the root", func() {
		in := orgSetup()
		in.secrets = append(in.secrets,
			credentials("cf", "root-registry", "registry.local", "registry.local/root"),
			credentials("cf", "root-hub", "https://index.docker.io/v1/", ""),
			credentials("space", "space-registry", "registry.local", "registry.local/org/space/team"))
		in.serviceAccounts = append(in.serviceAccounts, serviceAccount("space", "space-build", "space-registry", "root-hub"))
		in.builders = append(in.builders, placedBuilder("cf", "root-builder", true), placedBuilder("space", "space-builder", true))
		r := resolve(in)
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config.DropletRepositoryPrefix).To(Equal("registry.local/org/space/team"))
		Expect(r.config.RegistryCredentials).To(ConsistOf(
			cfv1alpha1.RegistryCredential{Registry: "index.docker.io", Secret: cfv1alpha1.PlacedObject{Name: "root-hub", From: "cf"}},
			cfv1alpha1.RegistryCredential{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: "space"}},
		))
		Expect(r.config.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "space-build", From: "space"}))
		Expect(r.config.Builder).To(Equal(&cfv1alpha1.PlacedBuilder{
			PlacedObject: cfv1alpha1.PlacedObject{Name: "space-builder", From: "space"},
			LatestImage:  "registry.local/builders/space-builder@sha256:abc",
		}), "the space's own Builder is used as it is, without a ClusterBuilder")
	})

	It("puts the org and the space below a repository placed at the root", func() {
		in := orgSetup()
		in.secrets[0].Annotations = nil
		in.secrets = append(in.secrets, credentials("cf", "root-registry", "registry.local", "registry.local/all-orgs/"))
		r := resolve(in)
		Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
		Expect(r.config.DropletRepositoryPrefix).To(Equal("registry.local/all-orgs/org/space"))
		Expect(r.config.RegistryCredentials[0].Secret.Name).To(Equal("org-registry"))
	})

	Describe("a space that an operator gives a repository of its own, outside the org's", func() {
		// ownRegistry is what `kubectl cf set-registry ORG SPACE` places: the space's credentials
		// with its repository, and its build ServiceAccount listing them.
		ownRegistry := func(in *inputs, registry, repository string, listed ...string) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", registry, repository))
			in.serviceAccounts = append(in.serviceAccounts, serviceAccount("space", "space-build", append([]string{"space-registry"}, listed...)...))
		}

		It("needs nothing of the org's but a Builder: no credentials, no repository", func() {
			in := inputs{ancestry: ancestryOf(spaceNS), builders: []builderCandidate{placedBuilder("cf", "root-builder", true)}}
			ownRegistry(&in, "own.registry", "own.registry/teams/space/")
			r := resolve(in)
			Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
			Expect(r.config.DropletRepositoryPrefix).To(Equal("own.registry/teams/space"))
			Expect(r.config.RegistryCredentials).To(ConsistOf(cfv1alpha1.RegistryCredential{
				Registry: "own.registry", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: "space"}}))
			Expect(r.config.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "space-build", From: "space"}))
		})

		It("pushes there with the space's credentials, beside the org's for the org's registry", func() {
			in := orgSetup()
			ownRegistry(&in, "own.registry", "own.registry/space", "org-registry")
			r := resolve(in)
			Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
			Expect(r.config.DropletRepositoryPrefix).To(Equal("own.registry/space"))
			Expect(r.config.RegistryCredentials).To(ConsistOf(
				cfv1alpha1.RegistryCredential{Registry: "own.registry", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: "space"}},
				cfv1alpha1.RegistryCredential{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "org-registry", From: "org"}},
			))
		})

		It("may be on the org's registry host, outside the org's repository, with the space's own account", func() {
			in := orgSetup()
			ownRegistry(&in, "registry.local", "registry.local/isolated/space")
			r := resolve(in)
			Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
			Expect(r.config.DropletRepositoryPrefix).To(Equal("registry.local/isolated/space"))
			Expect(r.config.RegistryCredentials).To(ConsistOf(HaveField("Secret", cfv1alpha1.PlacedObject{Name: "space-registry", From: "space"})))
		})
	})

	DescribeTable("says precisely what is missing or wrong",
		func(change func(*inputs), reason string, message string) {
			in := orgSetup()
			change(&in)
			c := resolve(in).condition()
			Expect(c.Status).To(Equal(metav1.ConditionFalse))
			Expect(c.Reason).To(Equal(reason))
			Expect(c.Message).To(ContainSubstring(message))
		},
		Entry("no credentials at all", func(in *inputs) { in.secrets = nil },
			cfv1alpha1.RegistryCredentialsMissingReason, "no build-config Secret in space or above holds registry credentials"),
		Entry("credentials for another registry than the droplets'", func(in *inputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = dockerConfigJSON("other.local")
		}, cfv1alpha1.RegistryCredentialsMissingReason, "holds credentials for registry.local"),
		Entry("no droplet repository", func(in *inputs) { in.secrets[0].Annotations = nil },
			cfv1alpha1.DropletRepositoryMissingReason, "no build-config Secret in space or above has the annotation "+cfv1alpha1.DropletRepositoryPrefixAnnotation),
		Entry("a space's droplet repository aimed at a sibling space's", func(in *inputs) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", "registry.local", "registry.local/org/spacex"))
		}, cfv1alpha1.InvalidDropletRepositoryReason,
			`Secret space-registry (from space): droplet repository "registry.local/org/spacex" lies within "registry.local/org", placed above the space, whose credentials reach it from every space below; a space may only narrow its own repository "registry.local/org/space" there, or have one outside "registry.local/org"`),
		Entry("a space's droplet repository aimed at the org's own", func(in *inputs) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", "registry.local", "registry.local/org/"))
		}, cfv1alpha1.InvalidDropletRepositoryReason, `droplet repository "registry.local/org" lies within "registry.local/org"`),
		Entry("a space's droplet repository within the root's, when the org places its own", func(in *inputs) {
			in.secrets = append(in.secrets,
				credentials("cf", "root-registry", "registry.local", "registry.local/all-orgs"),
				credentials("space", "space-registry", "registry.local", "registry.local/all-orgs/other-org/space"))
		}, cfv1alpha1.InvalidDropletRepositoryReason, `lies within "registry.local/all-orgs", placed above the space`),
		Entry("a space's droplet repository outside the org's, pushed with the org's credentials", func(in *inputs) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", "other.local", "registry.local/other-org"))
		}, cfv1alpha1.InvalidDropletRepositoryReason,
			`droplet repository "registry.local/other-org" is the space's own, outside the repositories placed above it, so the space's builds must push there with credentials of the space's own, but those for its registry are Secret org-registry (from org)`),
		Entry("a space's own droplet repository without credentials for its registry", func(in *inputs) {
			in.secrets = []corev1.Secret{credentials("space", "space-registry", "other.local", "registry.local/space")}
		}, cfv1alpha1.RegistryCredentialsMissingReason, "no build-config Secret in space or above holds credentials for registry.local"),
		Entry("two Secrets of the space that both set the droplet repository", func(in *inputs) {
			in.secrets = append(in.secrets,
				credentials("space", "space-registry", "registry.local", "registry.local/org/space/a"),
				credentials("space", "space-more", "registry.local", "registry.local/org/space/b"))
		}, cfv1alpha1.AmbiguousBuildConfigReason, "Secrets space-more, space-registry (from space) both set the droplet repository"),
		Entry("a droplet repository that is no repository", func(in *inputs) {
			in.secrets[0].Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation] = "Registry.Local/UPPER"
		}, cfv1alpha1.InvalidDropletRepositoryReason, `droplet repository "Registry.Local/UPPER/space"`),
		Entry("a docker config without auths", func(in *inputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"credsStore":"desktop"}`)
		}, cfv1alpha1.InvalidDockerConfigReason, `Secret org-registry (from org): .dockerconfigjson has no registries under "auths"`),
		Entry("a docker config that is no JSON", func(in *inputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":`)
		}, cfv1alpha1.InvalidDockerConfigReason, "is not a docker config"),
		Entry("an auth that is not base64 of user:password", func(in *inputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.local":{"auth":"bm9jb2xvbg=="}}}`)
		}, cfv1alpha1.InvalidDockerConfigReason, "must be formatted as base64(username:password)"),
		Entry("a registry entry without credentials", func(in *inputs) {
			in.secrets[0].Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.local":{}}}`)
		}, cfv1alpha1.InvalidDockerConfigReason, "no credentials"),
		Entry("an Opaque Secret", func(in *inputs) { in.secrets[0].Type = corev1.SecretTypeOpaque },
			cfv1alpha1.InvalidDockerConfigReason, `type is "Opaque"`),
		Entry("no build ServiceAccount", func(in *inputs) { in.serviceAccounts = nil },
			cfv1alpha1.ServiceAccountMissingReason, "no ServiceAccount labelled"),
		Entry("a ServiceAccount naming a Secret that does not exist", func(in *inputs) {
			in.serviceAccounts[0].ImagePullSecrets = []corev1.LocalObjectReference{{Name: "gone"}}
			in.missingSecrets = map[string]bool{"gone": true}
		}, cfv1alpha1.ServiceAccountSecretMissingReason, "ServiceAccount org-build (from org) names Secrets that do not exist in space: gone"),
		Entry("space credentials that the org's ServiceAccount does not list", func(in *inputs) {
			in.secrets = append(in.secrets, credentials("space", "space-registry", "registry.local", ""))
		}, cfv1alpha1.CredentialsNotOnServiceAccountReason, "does not list Secret space-registry (from space)"),
		Entry("two build ServiceAccounts in the org", func(in *inputs) {
			in.serviceAccounts = append(in.serviceAccounts, serviceAccount("org", "another", "org-registry"))
		}, cfv1alpha1.AmbiguousBuildConfigReason, "ServiceAccounts another, org-build (from org)"),
		Entry("no Builder", func(in *inputs) { in.builders = nil },
			cfv1alpha1.BuilderMissingReason, "no kpack Builder labelled"),
		Entry("an org's Builder whose ClusterBuilder is not ready", func(in *inputs) {
			in.builders[0] = placedBuilder("org", "org-builder", false)
		}, cfv1alpha1.BuilderNotReadyReason, "Builder org-builder (from org) is not ready: ClusterBuilder org.org-builder: stack not ready"),
		Entry("an org's Builder that cf-hnc has not made a ClusterBuilder of yet", func(in *inputs) {
			in.builders[0].clusterBuilder = nil
		}, cfv1alpha1.BuilderNotReadyReason, "cf-hnc has not made ClusterBuilder org.org-builder from it yet"),
		Entry("a space's own Builder that is not ready", func(in *inputs) {
			in.builders = append(in.builders, placedBuilder("space", "space-builder", false))
		}, cfv1alpha1.BuilderNotReadyReason, "Builder space-builder (from space) is not ready: stack not ready"),
		Entry("a Builder ready only for its previous generation", func(in *inputs) {
			in.builders[0].clusterBuilder.Status.ObservedGeneration = 2
		}, cfv1alpha1.BuilderNotReadyReason, "kpack has not built its current spec yet"),
		Entry("an org's Secret that has not reached the space yet", func(in *inputs) {
			in.unpropagated = []unpropagated{{kind: "Secret", name: "org-extra", from: "org"}}
		}, cfv1alpha1.PropagationPendingReason, "Secret org-extra placed in org has not reached space yet"),
		Entry("an org's Secret that HNC refuses to propagate", func(in *inputs) {
			in.unpropagated = []unpropagated{{kind: "Secret", name: "org-extra", from: "org", blocked: "would overwrite objects in space"}}
		}, cfv1alpha1.PropagationBlockedReason, "HNC refuses to propagate Secret org-extra from org: would overwrite objects in space"),
		Entry("a space's own object with the name of the org's", func(in *inputs) {
			in.unpropagated = []unpropagated{{kind: "ServiceAccount", name: "cf-build-org", from: "org", conflicting: true}}
		}, cfv1alpha1.BuildConfigNameConflictReason, "ServiceAccount cf-build-org in space has the name of the ServiceAccount placed in org"),
	)

	It("names every problem, the most important first", func() {
		in := orgSetup()
		in.builders = nil
		in.secrets[0].Type = corev1.SecretTypeOpaque
		c := resolve(in).condition()
		Expect(c.Reason).To(Equal(cfv1alpha1.InvalidDockerConfigReason))
		Expect(c.Message).To(And(ContainSubstring(`type is "Opaque"`), ContainSubstring("no kpack Builder")))
	})

	It("names the credentials a build ServiceAccount must list, one per registry, the nearest winning", func() {
		org := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org", Labels: map[string]string{
			"org" + hncv1alpha2.LabelTreeDepthSuffix: "0", "cf" + hncv1alpha2.LabelTreeDepthSuffix: "1"}}}
		secrets := []corev1.Secret{
			credentials("cf", "root-registry", "registry.local", ""),
			credentials("cf", "root-hub", "index.docker.io", ""),
			credentials("space", "org-registry", "registry.local", ""),
		}
		for i := range secrets {
			secrets[i].Namespace = "org"
		}
		Expect(ServiceAccountCredentials(org, secrets)).To(Equal([]string{"root-hub", "org-registry"}))
	})

	Describe("two Secrets with credentials for one registry host, the builder images' and the droplets'", func() {
		// A root Secret for every org holds credentials for the registry of the builder images and
		// for the droplets' registry; an org places its own for the droplets' registry. kpack builds
		// with the first Secret a ServiceAccount lists for a registry, and never tries the next.
		rootAndOrg := func() []corev1.Secret {
			both := credentials("cf", "root-registry", "registry.local", "")
			both.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"builders.local":{"auth":"dXNlcjpzZWNyZXQ="},"registry.local":{"auth":"dXNlcjpzZWNyZXQ="}}}`)
			return []corev1.Secret{both, credentials("org", "org-registry", "registry.local", "registry.local/org")}
		}

		It("lists the org's first, so that builds push droplets with it, and the root's for the builder images after it", func() {
			org := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org", Labels: map[string]string{
				"org" + hncv1alpha2.LabelTreeDepthSuffix: "0", "cf" + hncv1alpha2.LabelTreeDepthSuffix: "1"}}}
			secrets := rootAndOrg()
			secrets[1].Labels = nil
			for i := range secrets {
				secrets[i].Namespace = "org"
			}
			Expect(ServiceAccountCredentials(org, secrets)).To(Equal([]string{"org-registry", "root-registry"}))
		})

		It("says so when the build ServiceAccount lists the root's first", func() {
			in := orgSetup()
			in.secrets = rootAndOrg()
			in.serviceAccounts = []corev1.ServiceAccount{serviceAccount("org", "org-build", "root-registry", "org-registry")}
			c := resolve(in).condition()
			Expect(c.Reason).To(Equal(cfv1alpha1.CredentialsNotOnServiceAccountReason))
			Expect(c.Message).To(Equal("ServiceAccount org-build (from org) lists Secret root-registry (from cf) before Secret org-registry (from org), and both hold credentials for registry.local: " +
				"kpack builds with the first one a ServiceAccount lists for a registry, so builds would use root-registry, not org-registry, which wins for registry.local; " +
				"take root-registry off the ServiceAccount, or its credentials for registry.local out of it"))
		})

		It("is complete with the order cf-hnc gives the build ServiceAccount", func() {
			in := orgSetup()
			in.secrets = rootAndOrg()
			in.serviceAccounts = []corev1.ServiceAccount{serviceAccount("org", "org-build", "org-registry", "root-registry")}
			r := resolve(in)
			Expect(r.condition()).To(HaveField("Status", metav1.ConditionTrue))
			Expect(r.config.RegistryCredentials).To(ConsistOf(
				cfv1alpha1.RegistryCredential{Registry: "builders.local", Secret: cfv1alpha1.PlacedObject{Name: "root-registry", From: "cf"}},
				cfv1alpha1.RegistryCredential{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "org-registry", From: "org"}},
			))
		})
	})

	It("keeps a credential Secret whose docker config breaks among them, after the winners", func() {
		org := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org", Labels: map[string]string{
			"org" + hncv1alpha2.LabelTreeDepthSuffix: "0", "cf" + hncv1alpha2.LabelTreeDepthSuffix: "1"}}}
		broken := credentials("space", "org-registry", "registry.local", "")
		broken.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{}}`)
		secrets := []corev1.Secret{broken, credentials("space", "org-hub", "index.docker.io", "")}
		for i := range secrets {
			secrets[i].Namespace = "org"
		}
		Expect(ServiceAccountCredentials(org, secrets)).To(Equal([]string{"org-hub", "org-registry"}))
	})
})

var _ = Describe("ClusterBuilder names", func() {
	It("names the placing namespace and the Builder, and stays short enough for kpack's image tag", func() {
		Expect(ClusterBuilderName("cf", "cf-default-builder")).To(Equal("cf.cf-default-builder"))
		long := ClusterBuilderName("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", strings.Repeat("builder-", 12))
		Expect(len("clusterbuilder-" + long)).To(BeNumerically("<=", 128))
		Expect(long).To(HavePrefix("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10."))
	})
})
