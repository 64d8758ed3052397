package cli_test

import (
	"encoding/base64"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("set-registry", func() {
	var name, org, dev, prod string

	BeforeEach(func(ctx SpecContext) {
		name = unique("acme")
		org = createOrg(ctx, name)
		dev, prod = createSpace(ctx, name, "dev"), createSpace(ctx, name, "prod")
	})

	It("places an org's registry once, shows every space picking it up, and rotates it when run again", func(ctx SpecContext) {
		out, err := kubectlCFWithStdin(ctx, "s3cret\n", "set-registry", name, "--server", "registry.local",
			"--username", "acme", "--password-stdin", "--droplet-repository", "registry.local/"+org)
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			fmt.Sprintf(`registry registry.local set for org %q: Secret cf-registry-org and ServiceAccount cf-build-org in namespace %s`, name, org),
			"ORG SPACE NAMESPACE BUILD READY",
			fmt.Sprintf("%s dev %s False (BuilderMissing)", name, dev),
			fmt.Sprintf("%s prod %s False (BuilderMissing)", name, prod),
		}))

		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "cf-registry-org"}, secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		Expect(secret.Labels).To(HaveKeyWithValue(cfv1alpha1.BuildConfigLabel, "true"))
		Expect(secret.Annotations).To(HaveKeyWithValue(cfv1alpha1.DropletRepositoryPrefixAnnotation, "registry.local/"+org))
		Expect(secret.Data).To(HaveKeyWithValue(corev1.DockerConfigJsonKey, MatchJSON(dockerConfig("registry.local", "acme", "s3cret"))))
		Expect(secret.ManagedFields).To(ContainElement(And(
			HaveField("Manager", "kubectl-cf"), HaveField("Operation", metav1.ManagedFieldsOperationApply))))
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "cf-build-org"}, sa)).To(Succeed())
		Expect(sa.Labels).To(HaveKeyWithValue(cfv1alpha1.BuildConfigLabel, "true"))

		By("the command having waited until every space resolved the registry; only the Builder (no kpack here) is missing")
		for _, space := range []string{dev, prod} {
			s := cfSpace(ctx, org, space)
			Expect(s.Status.Build.RegistryCredentials).To(ConsistOf(cfv1alpha1.RegistryCredential{
				Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: org}}))
			Expect(s.Status.Build.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "cf-build-org", From: org}))
			Expect(s.Status.Build.DropletRepositoryPrefix).To(Equal("registry.local/"+org+"/"+space), "each space has its own repository below the org's")
			Expect(meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)).To(HaveField("Reason", cfv1alpha1.BuilderMissingReason))
		}

		By("rotating the password, keeping the droplet repository")
		_, err = kubectlCF(ctx, "set-registry", org, "--server", "registry.local", "--username", "acme", "--password", "rotated")
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.Data).To(HaveKeyWithValue(corev1.DockerConfigJsonKey, MatchJSON(dockerConfig("registry.local", "acme", "rotated"))))
		Expect(secret.Annotations).To(HaveKeyWithValue(cfv1alpha1.DropletRepositoryPrefixAnnotation, "registry.local/"+org))
		Eventually(func() []byte {
			copied := &corev1.Secret{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-registry-org"}, copied)).To(Succeed())
			return copied.Data[corev1.DockerConfigJsonKey]
		}).Should(MatchJSON(dockerConfig("registry.local", "acme", "rotated")))
	})

	It("places a space's own registry, which overrides the org's for that space alone", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "set-registry", name, "--server", "registry.local", "--username", "acme",
			"--password", "s3cret", "--droplet-repository", "registry.local/"+org)
		Expect(err).NotTo(HaveOccurred())

		out, err := kubectlCF(ctx, "set-registry", name, "DEV", "--server", "registry.local", "--username", "acme-dev",
			"--password", "s3cret", "--droplet-repository", "registry.local/"+org+"/"+dev+"/narrowed")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			fmt.Sprintf(`registry registry.local set for space "dev" of org %q: Secret cf-registry-space and ServiceAccount cf-build-space in namespace %s`, name, dev),
			"ORG SPACE NAMESPACE BUILD READY",
			fmt.Sprintf("%s dev %s False (BuilderMissing)", name, dev),
			fmt.Sprintf(`droplets of space "dev" of org %q go to registry.local/%s/%s/narrowed`, name, org, dev),
		}))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-registry-space"}, &corev1.Secret{})).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-build-space"}, &corev1.ServiceAccount{})).To(Succeed())

		overridden := cfSpace(ctx, org, dev).Status.Build
		Expect(overridden.RegistryCredentials).To(ConsistOf(HaveField("Secret", cfv1alpha1.PlacedObject{Name: "cf-registry-space", From: dev})))
		Expect(overridden.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "cf-build-space", From: dev}))
		Expect(overridden.DropletRepositoryPrefix).To(Equal("registry.local/" + org + "/" + dev + "/narrowed"))
		other := cfSpace(ctx, org, prod).Status.Build
		Expect(other.RegistryCredentials).To(ConsistOf(HaveField("Secret", cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: org})))
		Expect(other.DropletRepositoryPrefix).To(Equal("registry.local/" + org + "/" + prod))
	})

	It("gives a space a registry and repository of its own, outside the org's, with nothing placed at the org", func(ctx SpecContext) {
		out, err := kubectlCF(ctx, "set-registry", name, "dev", "--server", "own.registry", "--username", "acme-dev",
			"--password", "s3cret", "--droplet-repository", "own.registry/teams/dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			fmt.Sprintf(`registry own.registry set for space "dev" of org %q: Secret cf-registry-space and ServiceAccount cf-build-space in namespace %s`, name, dev),
			"ORG SPACE NAMESPACE BUILD READY",
			fmt.Sprintf("%s dev %s False (BuilderMissing)", name, dev),
			fmt.Sprintf(`droplets of space "dev" of org %q go to own.registry/teams/dev`, name),
		}))
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-registry-space"}, secret)).To(Succeed())
		Expect(secret.Annotations).To(HaveKeyWithValue(cfv1alpha1.DropletRepositoryPrefixAnnotation, "own.registry/teams/dev"))
		build := cfSpace(ctx, org, dev).Status.Build
		Expect(build.RegistryCredentials).To(ConsistOf(cfv1alpha1.RegistryCredential{
			Registry: "own.registry", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-space", From: dev}}))

		By("moving the space's repository, the report waits for cf-hnc to resolve the new one")
		out, err = kubectlCF(ctx, "set-registry", name, "dev", "--server", "own.registry", "--username", "acme-dev",
			"--password", "s3cret", "--droplet-repository", "own.registry/moved/dev/")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(ContainElement(fmt.Sprintf(`droplets of space "dev" of org %q go to own.registry/moved/dev`, name)))
	})

	DescribeTable("refuses a space's droplet repository that cf-hnc would not build with, before it writes anything",
		func(ctx SpecContext, orgRepository, rootRepository string, spaceRepository func() string, message func() string) {
			if orgRepository != "" {
				_, err := kubectlCF(ctx, "set-registry", name, "--server", "registry.local", "--username", "acme",
					"--password", "s3cret", "--droplet-repository", orgRepository, "--wait=false")
				Expect(err).NotTo(HaveOccurred())
			}
			if rootRepository != "" {
				DeferCleanup(removeRootRegistry)
				_, err := kubectlCF(ctx, "set-registry", "--all-orgs", "--server", "registry.local", "--username", "cf",
					"--password", "s3cret", "--droplet-repository", rootRepository, "--wait=false")
				Expect(err).NotTo(HaveOccurred())
			}
			_, err := kubectlCF(ctx, "set-registry", name, "dev", "--server", "registry.local", "--username", "acme-dev",
				"--password", "s3cret", "--droplet-repository", spaceRepository())
			Expect(err).To(MatchError(message()))
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-registry-space"}, &corev1.Secret{})).To(BeNotFound())
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dev, Name: "cf-build-space"}, &corev1.ServiceAccount{})).To(BeNotFound())
		},
		Entry("a repository beside the space's", "registry.local/acme", "",
			func() string { return "registry.local/acme/" + prod },
			func() string {
				return fmt.Sprintf(`--droplet-repository "registry.local/acme/%s" lies within "registry.local/acme", placed above space "dev" of org %q, `+
					`whose credentials reach it from every space below: give "registry.local/acme/%s", the space's own repository there, or one below it, `+
					`or a repository outside "registry.local/acme", or omit --droplet-repository`, prod, name, dev)
			}),
		Entry("the org's repository itself, which the space's lies below", "registry.local/acme", "",
			func() string { return "registry.local/acme" },
			func() string {
				return fmt.Sprintf(`--droplet-repository "registry.local/acme" lies within "registry.local/acme", placed above space "dev" of org %q, `+
					`whose credentials reach it from every space below: give "registry.local/acme/%s", the space's own repository there, or one below it, `+
					`or a repository outside "registry.local/acme", or omit --droplet-repository`, name, dev)
			}),
		Entry("a repository beside the space's, below the root's", "", "registry.local/cf",
			func() string { return "registry.local/cf/" + dev },
			func() string {
				return fmt.Sprintf(`--droplet-repository "registry.local/cf/%s" lies within "registry.local/cf", placed above space "dev" of org %q, `+
					`whose credentials reach it from every space below: give "registry.local/cf/%s/%s", the space's own repository there, or one below it, `+
					`or a repository outside "registry.local/cf", or omit --droplet-repository`, dev, name, org, dev)
			}),
		Entry("a repository of the space's own on another registry than --server", "registry.local/acme", "",
			func() string { return "own.registry/" + dev },
			func() string {
				return fmt.Sprintf(`--droplet-repository "own.registry/%s" is a repository of the space's own, on registry own.registry, which its builds push to `+
					`with the credentials placed for the space, but those are for registry.local: give --server own.registry`, dev)
			}),
	)

	It("places the registry for every org in the root namespace", func(ctx SpecContext) {
		DeferCleanup(removeRootRegistry)
		out, err := kubectlCF(ctx, "set-registry", "--all-orgs", "--server", "registry.local", "--username", "cf",
			"--password", "s3cret", "--droplet-repository", "registry.local/cf", "--wait=false")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("registry registry.local set for all orgs: Secret cf-registry-root and ServiceAccount cf-build-root in namespace cf\n"))
		Eventually(func() *cfv1alpha1.SpaceBuildConfig { return cfSpace(ctx, org, dev).Status.Build }).Should(And(
			HaveField("RegistryCredentials", ConsistOf(HaveField("Secret", cfv1alpha1.PlacedObject{Name: "cf-registry-root", From: testenv.RootNamespace}))),
			HaveField("ServiceAccount", Equal(&cfv1alpha1.PlacedObject{Name: "cf-build-root", From: testenv.RootNamespace}))))
	})

	It("refuses unclear or invalid arguments before it writes anything", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "set-registry", "--all-orgs", name, "--server", "registry.local", "--username", "u", "--password", "p")
		Expect(err).To(MatchError(ContainSubstring("give no ORG or SPACE")))
		_, err = kubectlCF(ctx, "set-registry", name, "--server", "registry.local", "--username", "u")
		Expect(err).To(MatchError(ContainSubstring("[password password-stdin]")))
		_, err = kubectlCFWithStdin(ctx, "", "set-registry", name, "--server", "registry.local", "--username", "u", "--password-stdin")
		Expect(err).To(MatchError("--password-stdin: stdin holds no password"))
		_, err = kubectlCF(ctx, "set-registry", name, "--server", "https://", "--username", "u", "--password", "p")
		Expect(err).To(MatchError(`--server "https://": no registry host`))
		_, err = kubectlCF(ctx, "set-registry", name, "--server", "registry.local", "--username", "u", "--password", "p",
			"--droplet-repository", "registry.local/Upper")
		Expect(err).To(MatchError(HavePrefix(`--droplet-repository "registry.local/Upper": `)))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "cf-registry-org"}, &corev1.Secret{})).To(BeNotFound())
	})
})

// removeRootRegistry removes what set-registry --all-orgs placed and waits until no space uses
// it any more, so that the specs that run next see the cluster as before.
func removeRootRegistry(ctx SpecContext) {
	placed := metav1.ObjectMeta{Namespace: testenv.RootNamespace, Name: "cf-registry-root"}
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: placed}))).To(Succeed())
	placed.Name = "cf-build-root"
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: placed}))).To(Succeed())
	Eventually(func() []string {
		spaces := &cfv1alpha1.CFSpaceList{}
		Expect(k8s.List(ctx, spaces)).To(Succeed())
		var using []string
		for _, s := range spaces.Items {
			if build := s.Status.Build; build != nil && (build.ServiceAccount != nil && build.ServiceAccount.From == testenv.RootNamespace ||
				slices.ContainsFunc(build.RegistryCredentials, func(c cfv1alpha1.RegistryCredential) bool { return c.Secret.From == testenv.RootNamespace })) {
				using = append(using, s.Name)
			}
		}
		return using
	}).Should(BeEmpty())
}

func cfSpace(ctx SpecContext, org, space string) *cfv1alpha1.CFSpace {
	GinkgoHelper()
	s := &cfv1alpha1.CFSpace{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
	return s
}

func dockerConfig(registry, user, password string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, registry, auth)
}
