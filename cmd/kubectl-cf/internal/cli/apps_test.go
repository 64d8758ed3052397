package cli_test

import (
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// The listings as far as this suite (no kpack) can stage: the apps and builds that the e2e
// suite pushes are listed there.
var _ = Describe("apps and builds", func() {
	var org, space string
	var web, worker *cfv1alpha1.CFApp

	BeforeEach(func(ctx SpecContext) {
		org = unique("acme")
		createOrg(ctx, org)
		space = createSpace(ctx, org, "dev")
		worker, web = cftest.CreateApp(ctx, k8s, space, "worker", cfv1alpha1.StoppedState), cftest.CreateApp(ctx, k8s, space, "Web", cfv1alpha1.StoppedState)
		Eventually(func() string { return dropletStatus(ctx, web) }).Should(Equal(cfv1alpha1.NoDropletReason))
		Eventually(func() string { return dropletStatus(ctx, worker) }).Should(Equal(cfv1alpha1.NoDropletReason))
	})

	It("prints the CFApps with -o, as kubectl does", func(ctx SpecContext) {
		out, err := kubectlCF(ctx, "apps", "--org", org, "-s", "dev", "-o", "yaml")
		Expect(err).NotTo(HaveOccurred())
		list := &cfv1alpha1.CFAppList{}
		Expect(yaml.UnmarshalStrict([]byte(out), list)).To(Succeed())
		Expect(list.Kind).To(Equal("CFAppList"))
		Expect(list.Items).To(HaveExactElements(
			And(HaveField("Kind", "CFApp"), HaveField("Name", web.Name)),
			And(HaveField("Kind", "CFApp"), HaveField("Name", worker.Name))))

		out, err = kubectlCF(ctx, "apps", "--org", org, "-s", "dev", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("cfapp.workloads.cloudfoundry.org/" + web.Name + "\ncfapp.workloads.cloudfoundry.org/" + worker.Name + "\n"))

		out, err = kubectlCF(ctx, "apps", "--org", org, "-s", "dev", "-o", "jsonpath={.items[*].spec.displayName}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("Web worker"))

		_, err = kubectlCF(ctx, "apps", "--org", org, "-s", "dev", "-o", "table")
		Expect(err).To(MatchError(HavePrefix(`unable to match a printer suitable for the output format "table", allowed formats are: `)))
	})

	It("works in the space that --namespace or the kubeconfig's context names", func(ctx SpecContext) {
		out, err := kubectlCF(ctx, "apps", "-n", space, "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(out)).To(HaveLen(2))

		config, err := clientcmd.LoadFromFile(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		config.Contexts[config.CurrentContext].Namespace = space
		targeted := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(clientcmd.WriteToFile(*config, targeted)).To(Succeed())
		out, err = kubectlCF(ctx, "builds", "web", "--kubeconfig", targeted)
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{"BUILD AGE STATE REASON REBUILD OF REBUILD REASON DROPLET RUNS"}))
	})

	It("lists an app's builds, found by its name in any case, with their state and reason", func(ctx SpecContext) {
		pkg := createPackage(ctx, web)
		first, second := createBuild(ctx, web, pkg), createBuild(ctx, web, pkg)
		// One of them waits for the package; the other is queued behind it (the older one, or
		// within the same second the one with the smaller name).
		Eventually(func() []string { return []string{buildReason(ctx, first), buildReason(ctx, second)} }).
			Should(ConsistOf(cfv1alpha1.WaitingReason, cfv1alpha1.QueuedReason))
		if second.CreationTimestamp.Equal(&first.CreationTimestamp) && second.Name < first.Name {
			first, second = second, first
		}
		createBuild(ctx, worker, createPackage(ctx, worker))

		out, err := kubectlCF(ctx, "builds", "WEB", "--org", org, "-s", "dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(HaveExactElements(
			"BUILD AGE STATE REASON REBUILD OF REBUILD REASON DROPLET RUNS",
			MatchRegexp(`^%s \d+s STAGING Waiting - - -$`, first.Name),
			MatchRegexp(`^%s \d+s STAGING Queued - - -$`, second.Name)))

		out, err = kubectlCF(ctx, "builds", web.Name, "--org", org, "-s", "dev", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(fmt.Sprintf("cfbuild.workloads.cloudfoundry.org/%s\ncfbuild.workloads.cloudfoundry.org/%s\n", first.Name, second.Name)))
	})

	It("says which app it does not know", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "builds", "api", "--org", org, "-s", "dev")
		Expect(err).To(MatchError(fmt.Sprintf(`app "api" not found: space "dev" of org %q has no app with that name or GUID`, org)))
		_, err = kubectlCF(ctx, "restage", "api", "-o", org, "-s", "dev")
		Expect(err).To(MatchError(fmt.Sprintf(`app "api" not found: space "dev" of org %q has no app with that name or GUID`, org)))
	})

	It("restages nothing for an app that was never pushed", func(ctx SpecContext) {
		createPackage(ctx, web)
		_, err := kubectlCF(ctx, "restage", "web", "-o", org, "-s", "dev")
		Expect(err).To(MatchError(`app "Web" has no package to stage: push it first`))
		builds := &cfv1alpha1.CFBuildList{}
		Expect(k8s.List(ctx, builds, client.InNamespace(space))).To(Succeed())
		Expect(builds.Items).To(BeEmpty())
	})
})

// createPackage creates a package of the app that is not uploaded, which keeps its builds
// waiting.
func createPackage(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.CFPackage {
	GinkgoHelper()
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name}},
	}
	Expect(k8s.Create(ctx, pkg)).To(Succeed())
	return pkg
}

func createBuild(ctx SpecContext, app *cfv1alpha1.CFApp, pkg *cfv1alpha1.CFPackage) *cfv1alpha1.CFBuild {
	GinkgoHelper()
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
	Expect(k8s.Create(ctx, build)).To(Succeed())
	return build
}

func dropletStatus(ctx SpecContext, app *cfv1alpha1.CFApp) string {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
	if c := meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition); c != nil {
		return c.Reason
	}
	return ""
}

func buildReason(ctx SpecContext, build *cfv1alpha1.CFBuild) string {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
	if c := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition); c != nil {
		return c.Reason
	}
	return ""
}
