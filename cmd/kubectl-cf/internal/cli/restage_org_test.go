package cli_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// This suite runs no kpack: restage-org's staging is specified in e2e/runbook_test.go, where it
// moves an org's apps to another stack; here, that it reaches every app and goes on after one
// that does not restage.
var _ = Describe("restage-org", func() {
	It("restages every app of every space of the org, by space and app name, goes on after an app that does not restage, and names each that did not", func(ctx SpecContext) {
		org := unique("acme")
		createOrg(ctx, org)
		dev, prod := createSpace(ctx, org, "dev"), createSpace(ctx, org, "prod")
		cftest.CreateApp(ctx, k8s, dev, "web", cfv1alpha1.StoppedState)
		uploaded(ctx, cftest.CreateApp(ctx, k8s, dev, "Worker", cfv1alpha1.StoppedState))
		uploaded(ctx, cftest.CreateApp(ctx, k8s, prod, "api", cfv1alpha1.StoppedState))
		cannotBuild := func(space string) string {
			return fmt.Sprintf(`space %q of org %q cannot build: BuildReady is False (RegistryCredentialsMissing): `, space, org)
		}

		out, err := kubectlCF(ctx, "restage-org", org)
		Expect(lines(out)).To(HaveExactElements(
			fmt.Sprintf(`[1/3] app "web" in space "dev" of org %q`, org),
			`Error: app "web" has no package to stage: push it first`,
			fmt.Sprintf(`[2/3] app "Worker" in space "dev" of org %q`, org),
			HavePrefix("Error: "+cannotBuild("dev")),
			fmt.Sprintf(`[3/3] app "api" in space "prod" of org %q`, org),
			HavePrefix("Error: "+cannotBuild("prod"))))
		Expect(err).To(MatchError(And(
			HavePrefix(fmt.Sprintf("3 of the 3 apps of org %q did not restage:\n", org)+
				`app "web" in space "dev": app "web" has no package to stage: push it first`+"\n"+
				`app "Worker" in space "dev": `+cannotBuild("dev")),
			ContainSubstring("\n"+`app "api" in space "prod": `+cannotBuild("prod")))))
		for _, space := range []string{dev, prod} {
			builds := &cfv1alpha1.CFBuildList{}
			Expect(k8s.List(ctx, builds, client.InNamespace(space))).To(Succeed())
			Expect(builds.Items).To(BeEmpty(), "no build in a space that cannot build")
		}
	})

	It("says which org it does not know", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "restage-org", "no-such-org")
		Expect(err).To(MatchError(`org "no-such-org" not found: no org in namespace "cf" has that name or GUID`))
	})
})

// uploaded gives the app a package whose bits were uploaded, as push does: one restage stages.
func uploaded(ctx SpecContext, app *cfv1alpha1.CFApp) {
	GinkgoHelper()
	pkg := createPackage(ctx, app)
	mutate(ctx, pkg, func() {
		pkg.Spec.Source.Registry.Image = "registry.local/acme/" + app.Name + "-package@sha256:" + fmt.Sprintf("%064d", 1)
	})
}
