package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf/internal/cli"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("tree", func() {
	It("shows the orgs with their spaces sorted by name, whether each is ready, and why a space cannot build", func(ctx SpecContext) {
		prefix := unique("tree")
		beta, alpha := createOrg(ctx, prefix+"-Beta"), createOrg(ctx, prefix+"-alpha")
		prod, dev, web := createSpace(ctx, beta, "prod"), createSpace(ctx, beta, "dev"), createSpace(ctx, alpha, "web")
		_, err := kubectlCF(ctx, "set-registry", beta, "prod", "--server", "registry.local", "--username", "u", "--password", "p")
		Expect(err).NotTo(HaveOccurred())

		out, err := kubectlCF(ctx, "tree")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)[0]).To(Equal("ORG / SPACE NAMESPACE READY BUILD READY"))
		Expect("\n" + strings.Join(lines(out), "\n") + "\n").To(ContainSubstring("\n" + strings.Join([]string{
			prefix + "-alpha " + alpha + " True",
			"└── web " + web + " True False (RegistryCredentialsMissing)",
			prefix + "-Beta " + beta + " True",
			"├── dev " + dev + " True False (RegistryCredentialsMissing)",
			"└── prod " + prod + " True False (DropletRepositoryMissing)",
		}, "\n") + "\n"))

		By("aligning the columns under the header")
		raw := strings.Split(out, "\n")
		for _, guid := range []string{alpha, web, beta, dev, prod} {
			line := raw[slices.IndexFunc(raw, func(l string) bool { return strings.Contains(l, guid) })]
			Expect(column(line, guid)).To(Equal(column(raw[0], "NAMESPACE")), line)
		}
		devLine := raw[slices.IndexFunc(raw, func(l string) bool { return strings.Contains(l, dev) })]
		Expect(column(devLine, "False")).To(Equal(column(raw[0], "BUILD READY")), devLine)
	})

	It("marks the orgs and spaces that are being deleted", func(ctx SpecContext) {
		name := unique("leaving")
		org := createOrg(ctx, name)
		space := createSpace(ctx, org, "dev")
		orgObj := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.RootNamespace, Name: org}}
		spaceObj := &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: space}}
		for _, obj := range []client.Object{orgObj, spaceObj} {
			hold(ctx, obj)
		}
		Expect(k8s.Delete(ctx, orgObj)).To(Succeed())

		Eventually(func() []string {
			out, err := kubectlCF(ctx, "tree")
			Expect(err).NotTo(HaveOccurred())
			return lines(out)
		}).Should(ContainElements(
			HavePrefix(name+" (deleting) "+org),
			HavePrefix("└── dev (deleting) "+space)))
	})

	It("reads every org and every space in two List calls, however many spaces there are", func(ctx SpecContext) {
		name := unique("many")
		org := createOrg(ctx, name)
		Expect(treeCalls(ctx)).To(Equal(map[string]int{"List": 2}))

		for i := range 10 {
			Expect(k8s.Create(ctx, &cfv1alpha1.CFSpace{
				ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: string(uuid.NewUUID())},
				Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: fmt.Sprintf("space-%02d", i)},
			})).To(Succeed())
		}
		Expect(treeCalls(ctx)).To(Equal(map[string]int{"List": 2}))
		out, err := kubectlCF(ctx, "tree")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(ContainElement(HavePrefix("└── space-09 ")))
		Expect(strings.Count(out, "── space-")).To(BeNumerically(">=", 10))
	})
})

// column is where text starts in a line, in characters as a terminal shows them.
func column(line, text string) int {
	return utf8.RuneCountInString(line[:strings.Index(line, text)])
}

// hold keeps an object from going away once deleted, until the spec ends.
func hold(ctx SpecContext, obj client.Object) {
	const finalizer = "test.cloudfoundry.org/hold"
	mutate(ctx, obj, func() { controllerutil.AddFinalizer(obj, finalizer) })
	DeferCleanup(func(ctx SpecContext) {
		mutate(ctx, obj, func() { controllerutil.RemoveFinalizer(obj, finalizer) })
	})
}

// treeCalls runs tree with a client that counts the calls it makes, by method.
func treeCalls(ctx context.Context) map[string]int {
	GinkgoHelper()
	counter := &countingClient{calls: map[string]int{}}
	cmd := cli.NewCommandWrappingClient(func(c client.Client) client.Client {
		counter.Client = c
		return counter
	})
	_, err := execute(ctx, cmd, "", "tree")
	Expect(err).NotTo(HaveOccurred())
	return counter.calls
}

// countingClient counts the reads a command makes.
type countingClient struct {
	client.Client
	calls map[string]int
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.calls["Get"]++
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.calls["List"]++
	return c.Client.List(ctx, list, opts...)
}
