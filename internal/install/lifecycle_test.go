package install_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// An installation's life against the real apiserver and HNC, with cf-hnc's reconcilers and
// webhooks in the test process (internal/harness/testenv) and config/default applied without
// what serves only the in-cluster manager, as `make run` against a cluster applies it: install,
// install again, uninstall keeping the data, install again, and uninstall with the data. Each
// step is what docs/install.md tells an operator; the e2e suite upgrades and uninstalls the
// manager's pods themselves.
var _ = Describe("Installing, upgrading and uninstalling cf-hnc", Ordered, func() {
	var (
		cp    *controlplane.ControlPlane
		k8s   client.Client
		objs  []*unstructured.Unstructured
		org   string
		space string
	)

	BeforeAll(func(ctx SpecContext) {
		cp = testenv.Start(ctx, "install")
		SetDefaultEventuallyTimeout(time.Minute)
		k8s = cp.Client
		for _, obj := range build("") {
			if !install.InClusterOnly(obj) {
				objs = append(objs, obj)
			}
		}
		Expect(install.Apply(ctx, k8s, objs)).To(Succeed())
	}, NodeTimeout(5*time.Minute))

	AfterEach(func() { Expect(cp.Healthy()).To(Succeed()) })

	gone := func(ctx SpecContext, obj client.Object) func() bool {
		return func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }
	}
	present := func(ctx SpecContext, obj client.Object) {
		GinkgoHelper()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "%T %s", obj, obj.GetName())
	}
	propagatedCredentials := func(ctx SpecContext, ns string) func() error {
		return func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cf-registry-org"}, &corev1.Secret{})
		}
	}

	It("applies cleanly again over a running installation (an upgrade to the same version)", func(ctx SpecContext) {
		org = testenv.CreateOrg(ctx, k8s, "acme")
		space = testenv.CreateSpace(ctx, k8s, org, "dev")
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-registry-org",
				Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig("registry.example", "acme", "secret")},
		})).To(Succeed())
		Eventually(propagatedCredentials(ctx, space)).Should(Succeed())

		Expect(install.Apply(ctx, k8s, objs)).To(Succeed(), "the unchanged build applies cleanly again")
		Expect(cp.Healthy()).To(Succeed())
		testenv.CreateSpace(ctx, k8s, org, "staging")
	})

	It("takes back, in an upgrade, what an earlier release granted and this one does not", func(ctx SpecContext) {
		finder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc:space-finder"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{cfv1alpha1.GroupVersion.Group}, Resources: []string{"cforgs"}, Verbs: []string{"get"},
		}}}
		everyone := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc:space-finder"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: finder.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
		}
		Expect(k8s.Create(ctx, finder)).To(Succeed(), "as the releases before the CF API installed it")
		Expect(k8s.Create(ctx, everyone)).To(Succeed())

		Expect(install.Apply(ctx, k8s, objs)).To(Succeed())
		Expect(gone(ctx, everyone)()).To(BeTrue(), "every authenticated user could get any CFOrg")
		Expect(gone(ctx, finder)()).To(BeTrue())
		Expect(install.Apply(ctx, k8s, objs)).To(Succeed(), "and again, with nothing left to take back")
	})

	It("uninstalls the manager and keeps orgs, spaces and propagated credentials", func(ctx SpecContext) {
		Expect(install.Uninstall(ctx, k8s, build(""), install.UninstallOptions{Timeout: 2 * time.Minute})).To(Succeed())

		for _, obj := range []client.Object{
			&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: install.ValidatingWebhookConfiguration}},
			&admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: install.MutatingWebhookConfiguration}},
			&admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc-manager-writes"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc-manager-rolebinding"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.Namespace}},
		} {
			Expect(gone(ctx, obj)()).To(BeTrue(), "%T %s is removed", obj, obj.GetName())
		}
		present(ctx, crd("cforgs"))
		present(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlplane.RootNamespace}})
		present(ctx, &hncv1alpha2.HNCConfiguration{ObjectMeta: metav1.ObjectMeta{Name: hncv1alpha2.HNCConfigSingleton}})
		present(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: org}})
		present(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}})
		Expect(propagatedCredentials(ctx, space)()).To(Succeed(), "HNC keeps the copies")

		By("leaving no webhook of a manager that is gone to fail CF writes closed")
		cfOrg := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: org}}
		present(ctx, cfOrg)
		Expect(cfOrg.Finalizers).To(ContainElement("workloads.cloudfoundry.org/namespace"), "a CFOrg keeps its finalizer")
		testenv.Update(ctx, k8s, cfOrg, func() { cfOrg.Spec.DisplayName = "acme-renamed" })
	})

	It("installs again over the kept data, and the manager takes it up", func(ctx SpecContext) {
		Expect(install.Apply(ctx, k8s, objs)).To(Succeed())
		another := testenv.CreateSpace(ctx, k8s, org, "prod")
		Eventually(propagatedCredentials(ctx, another)).Should(Succeed())
	})

	It("uninstalls with the data: orgs with their namespaces first, then the rest", func(ctx SpecContext) {
		Expect(install.Uninstall(ctx, k8s, build(""), install.UninstallOptions{Purge: true, Timeout: 2 * time.Minute})).To(Succeed())
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: org}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlplane.RootNamespace}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.Namespace}},
			crd("cforgs"),
			crd("cfspaces"),
		} {
			Expect(gone(ctx, obj)()).To(BeTrue(), "%T %s is removed", obj, obj.GetName())
		}
	})
})

// crd is the metadata of one of cf-hnc's CRDs: the clients' scheme does not know CRDs.
func crd(plural string) client.Object {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + cfv1alpha1.GroupVersion.Group}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	return obj
}
