package cli_test

import (
	"os/exec"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("create-org and create-space", func() {
	It("create an org and a space, wait until they are ready and show whether the space can build", func(ctx SpecContext) {
		name, guid := unique("acme"), string(uuid.NewUUID())
		out, err := kubectlCF(ctx, "create-org", name, "--guid", guid)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(`org "` + name + `" is ready: namespace ` + guid + "\n"))
		org := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testenv.RootNamespace, Name: guid}, org)).To(Succeed())
		Expect(org.Spec.DisplayName).To(Equal(name))
		Expect(meta.IsStatusConditionTrue(org.Status.Conditions, cfv1alpha1.ReadyCondition)).To(BeTrue())

		By("naming the org by its display name in another case, as Cloud Foundry allows")
		out, err = kubectlCF(ctx, "create-space", strings.ToUpper(name), "dev")
		Expect(err).NotTo(HaveOccurred())
		space := guidIn(out)
		Expect(strings.Split(out, "\n")).To(HaveExactElements(
			`space "dev" in org "`+name+`" is ready: namespace `+space,
			HavePrefix("build ready: False (RegistryCredentialsMissing): no build-config Secret in "+space+" or above holds registry credentials; "),
			""))
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(cfv1alpha1.OrgGUIDLabel, guid))
		Expect(ns.Annotations).To(HaveKeyWithValue(cfv1alpha1.SpaceNameAnnotation, "dev"))
	})

	It("name an org by its GUID", func(ctx SpecContext) {
		org := createOrg(ctx, unique("acme"))
		out, err := kubectlCF(ctx, "create-space", org, "dev", "--wait=false")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`^space "dev" created in org "acme-[0-9a-f]+": namespace [0-9a-f-]{36}\n$`))
	})

	It("report a taken org name with the server's message and create nothing", func(ctx SpecContext) {
		name := unique("acme")
		createOrg(ctx, name)
		guid := string(uuid.NewUUID())
		out, err := kubectlCF(ctx, "create-org", strings.ToUpper(name), "--guid", guid)
		Expect(err).To(MatchError(`creating org "` + strings.ToUpper(name) + `": spec.displayName: Invalid value: "` +
			strings.ToUpper(name) + `": Organization '` + strings.ToUpper(name) + `' already exists.`))
		Expect(out).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testenv.RootNamespace, Name: guid}, &cfv1alpha1.CFOrg{})).To(BeNotFound())
	})

	It("exit 1 from the binary, with the server's message on stderr", func(ctx SpecContext) {
		plugin, err := gexec.Build("code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		name := unique("acme")
		createOrg(ctx, name)

		session, err := gexec.Start(exec.Command(plugin, "create-org", name, "--kubeconfig", kubeconfig), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).Should(gexec.Exit(1))
		Expect(string(session.Err.Contents())).To(Equal(`Error: creating org "` + name + `": spec.displayName: Invalid value: "` +
			name + `": Organization '` + name + `' already exists.` + "\n"))
		Expect(session.Out.Contents()).To(BeEmpty())
	})

	It("report an unknown org clearly and create no space", func(ctx SpecContext) {
		guid := string(uuid.NewUUID())
		_, err := kubectlCF(ctx, "create-space", "no-such-org", "dev", "--guid", guid)
		Expect(err).To(MatchError(`org "no-such-org" not found: no org in namespace "cf" has that name or GUID`))
		spaces := &cfv1alpha1.CFSpaceList{}
		Expect(k8s.List(ctx, spaces)).To(Succeed())
		Expect(spaces.Items).NotTo(ContainElement(HaveField("ObjectMeta.Name", guid)))
	})

	It("stop waiting when the org's namespace needs an operator, and say why", func(ctx SpecContext) {
		guid := string(uuid.NewUUID())
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guid}})).To(Succeed())
		name := unique("acme")
		_, err := kubectlCF(ctx, "create-org", name, "--guid", guid)
		Expect(err).To(MatchError(HavePrefix(`org "%s" (namespace %s): needs an operator: False (AnchorConflict): `, name, guid)))
	})
})

var guidPattern = regexp.MustCompile(`namespace ([0-9a-f-]{36})`)

// guidIn returns the GUID that create-org or create-space printed.
func guidIn(out string) string {
	GinkgoHelper()
	match := guidPattern.FindStringSubmatch(out)
	Expect(match).NotTo(BeNil(), "no GUID in %q", out)
	return match[1]
}

// createOrg creates a ready org with the plugin and returns its GUID.
func createOrg(ctx SpecContext, name string) string {
	GinkgoHelper()
	out, err := kubectlCF(ctx, "create-org", name)
	Expect(err).NotTo(HaveOccurred())
	return guidIn(out)
}

// createSpace creates a ready space with the plugin and returns its GUID.
func createSpace(ctx SpecContext, org, name string) string {
	GinkgoHelper()
	out, err := kubectlCF(ctx, "create-space", org, name)
	Expect(err).NotTo(HaveOccurred())
	return guidIn(out)
}

// BeNotFound succeeds for an error that says the object does not exist.
func BeNotFound() OmegaMatcher {
	return WithTransform(func(err error) bool { return err != nil && client.IgnoreNotFound(err) == nil }, BeTrue())
}
