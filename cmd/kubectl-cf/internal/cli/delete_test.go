package cli_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("delete-space and delete-org", func() {
	var name, org, dev, prod string

	BeforeEach(func(ctx SpecContext) {
		name = unique("acme")
		org = createOrg(ctx, name)
		dev, prod = createSpace(ctx, name, "dev"), createSpace(ctx, name, "prod")
		_, err := kubectlCF(ctx, "set-registry", name, "--server", "registry.local", "--username", "u", "--password", "p",
			"--droplet-repository", "registry.local/acme")
		Expect(err).NotTo(HaveOccurred())
		web := cftest.CreateApp(ctx, k8s, dev, "web", cfv1alpha1.StoppedState)
		createBuild(ctx, web, createPackage(ctx, web))
	})

	It("say what goes with a space, and delete nothing unless the answer is yes", func(ctx SpecContext) {
		out, err := kubectlCFWithStdin(ctx, "n\n", "delete-space", name, "DEV")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			fmt.Sprintf(`Deleting space "dev" of org %q deletes its namespace %s and everything in it:`, name, dev),
			"apps 1: web",
			"packages 1",
			"builds 1",
			"build configuration Secret cf-registry-org, ServiceAccount cf-build-org",
			fmt.Sprintf(`Really delete space "dev" of org %q and all of the above? [y/N]: n`, name),
			"Nothing was deleted.",
		}))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: dev}, &cfv1alpha1.CFSpace{})).To(Succeed())

		out, err = kubectlCFWithStdin(ctx, "", "delete-space", name, "dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HaveSuffix("[y/N]: \nNothing was deleted.\n"), "no answer is no")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: dev}, &cfv1alpha1.CFSpace{})).To(Succeed())
	})

	It("delete a space with its namespace once the answer is yes, and wait until both are gone", func(ctx SpecContext) {
		out, err := kubectlCFWithStdin(ctx, "yes\n", "delete-space", name, "dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)[len(lines(out))-1]).To(Equal(fmt.Sprintf(`space "dev" of org %q is deleted, with its namespace %s`, name, dev)))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: dev}, &cfv1alpha1.CFSpace{})).To(BeNotFound())
		Expect(k8s.Get(ctx, client.ObjectKey{Name: dev}, &corev1.Namespace{})).To(BeNotFound())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: prod}, &cfv1alpha1.CFSpace{})).To(Succeed())
	})

	It("say what goes with an org, and with --force delete it with its spaces without asking", func(ctx SpecContext) {
		out, err := kubectlCFWithStdin(ctx, "y\n", "delete-org", name, "--force")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			fmt.Sprintf(`Deleting org %q deletes its namespace %s, and its spaces with their namespaces and everything in them:`, name, org),
			"space dev namespace " + dev,
			"apps 1: web",
			"packages 1",
			"builds 1",
			"space prod namespace " + prod,
			"apps 0",
			"packages 0",
			"builds 0",
			"build configuration Secret cf-registry-org, ServiceAccount cf-build-org in the org's namespace, and their copies in its spaces",
			fmt.Sprintf(`org %q is deleted, with its namespace %s and its spaces'`, name, org),
		}))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testenv.RootNamespace, Name: org}, &cfv1alpha1.CFOrg{})).To(BeNotFound())
		for _, ns := range []string{org, dev, prod} {
			Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(BeNotFound())
		}
	})

	It("refuse an unknown space or org", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "delete-space", name, "staging", "--force")
		Expect(err).To(MatchError(fmt.Sprintf(`space "staging" not found: org %q has no space with that name or GUID`, name)))
		_, err = kubectlCF(ctx, "delete-org", "no-such-org", "--force")
		Expect(err).To(MatchError(`org "no-such-org" not found: no org in namespace "cf" has that name or GUID`))
	})
})

var _ = Describe("set-upgrade-policy", func() {
	It("sets an org's buildpack upgrade policy and says what it does", func(ctx SpecContext) {
		name := unique("acme")
		guid := createOrg(ctx, name)
		out, err := kubectlCF(ctx, "set-upgrade-policy", name, "automatic")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(fmt.Sprintf(`org %q: buildpack upgrade policy Automatic (was Held): its apps move to the droplets kpack rebuilds `+
			"for new buildpacks or a new lifecycle as soon as they staged, held ones now\n", name)))
		org := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testenv.RootNamespace, Name: guid}, org)).To(Succeed())
		Expect(org.Spec.BuildpackUpgradePolicy).To(Equal(cfv1alpha1.AutomaticUpgrades))

		out, err = kubectlCF(ctx, "set-upgrade-policy", guid, "Automatic")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(fmt.Sprintf("org %q: the buildpack upgrade policy is Automatic already\n", name)))

		out, err = kubectlCF(ctx, "set-upgrade-policy", name, "Held")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(fmt.Sprintf(`org %q: buildpack upgrade policy Held (was Automatic): droplets that kpack rebuilds for new `+
			"buildpacks or a new lifecycle are held until `kubectl cf restage APP`; stack fixes still move apps at once\n", name)))

		_, err = kubectlCF(ctx, "set-upgrade-policy", name, "sometimes")
		Expect(err).To(MatchError(`unknown policy "sometimes": an org's buildpack upgrade policy is Automatic or Held`))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(org), org)).To(Succeed())
		Expect(org.Spec.BuildpackUpgradePolicy).To(Equal(cfv1alpha1.HeldUpgrades))
	})
})
