package policies_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The bounds of config/policies/bounds.yaml (review 3, N1 and N2).
const (
	maxLabels            = 32
	maxAnnotations       = 32
	maxMetadataBytes     = 4 * 1024
	maxFinalizers        = 8
	maxOwnerReferences   = 8
	maxSubjects          = 16
	maxSubjectName       = 256
	maxDataKeys          = 32
	maxDataBytes         = 16 * 1024
	maxServiceAccountRef = 8
)

// The policies this suite proves; the apiserver must type-check every expression of them.
var boundPolicies = []string{"cf-hnc-metadata-bounds", "cf-hnc-rolebinding-bounds", "cf-hnc-secret-bounds",
	"cf-hnc-configmap-bounds", "cf-hnc-serviceaccount-bounds", "cf-hnc-manager-statefulsets"}

// A tenant's role: who writes, and where.
type role int

const (
	developer role = iota
	spaceManagerRole
	orgManagerRole
)

var _ = Describe("Bounds on what a tenant writes in the CF tree", Ordered, ContinueOnFailure, func() {
	var (
		org, space string
		as         map[role]client.Client
		where      map[role]string
	)

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx)
		space = createSpace(ctx, org)
		as = map[role]client.Client{
			developer:        spaceDeveloper(ctx, org, space),
			spaceManagerRole: spaceManager(ctx, org, space),
			orgManagerRole:   orgManager(ctx, org),
		}
		where = map[role]string{developer: space, spaceManagerRole: space, orgManagerRole: org}
	})

	It("are policies the apiserver type-checks without a warning", func(ctx SpecContext) {
		for _, name := range boundPolicies {
			policy := &admissionv1.ValidatingAdmissionPolicy{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
			Expect(policy.Status.TypeChecking).NotTo(BeNil(), name)
			Expect(policy.Status.TypeChecking.ExpressionWarnings).To(BeEmpty(), name)
		}
	})

	DescribeTable("refuse what is beyond a bound, naming it, and admit the same write at the bound",
		func(ctx SpecContext, who role, object func(namespace string, n int) client.Object, within, beyond int, message string) {
			c, ns := as[who], where[who]
			Expect(c.Create(ctx, object(ns, beyond))).To(refusedWith(message))
			Expect(c.Create(ctx, object(ns, within))).To(Succeed(), "the same write at the bound")
		},
		// N2: CF objects of a megabyte each fill the manager's memory.
		Entry("a CFBuild with 10,000 labels (N2)", developer, cfBuild(withLabels), maxLabels, 10_000, "at most 32 labels"),
		Entry("a CFApp with 33 annotations", developer, cfApp(withAnnotations), maxAnnotations, maxAnnotations+1, "at most 32 annotations"),
		Entry("a CFPackage with 200 KiB of annotations (N2)", developer, cfPackage(withMetadataBytes), maxMetadataBytes, 200*1024,
			"at most 4 KiB of label and annotation keys and values"),
		Entry("a CFBuild with 1,000 finalizers (N2)", developer, cfBuild(withFinalizers), maxFinalizers, 1_000, "at most 8 finalizers"),
		Entry("a CFApp with 9 owner references", developer, cfApp(withOwners), maxOwnerReferences, maxOwnerReferences+1,
			"at most 8 ownerReferences"),
		// N1: what HNC caches (Secrets, ServiceAccounts, RoleBindings) and etcd stores.
		Entry("a Secret with 33 labels", developer, secret(withLabels), maxLabels, maxLabels+1, "at most 32 labels"),
		Entry("a Secret of more than 16 KiB", developer, secretOfBytes, maxDataBytes, maxDataBytes+1, "at most 16 KiB of data"),
		Entry("a Secret of 1,000 keys", developer, secretOfKeys, maxDataKeys, 1_000, "at most 32 keys"),
		Entry("a ConfigMap of more than 16 KiB", developer, configMapOfBytes, maxDataBytes, maxDataBytes+1, "at most 16 KiB of data"),
		Entry("a ConfigMap of 33 keys", developer, configMapOfKeys, maxDataKeys, maxDataKeys+1, "at most 32 keys"),
		Entry("a ConfigMap with 5 KiB of annotations", developer, configMap(withMetadataBytes), maxMetadataBytes, 5*1024,
			"at most 4 KiB of label and annotation keys and values"),
		Entry("a ServiceAccount listing 9 Secrets", developer, serviceAccountListing(false), maxServiceAccountRef, maxServiceAccountRef+1,
			"at most 8 secrets listed"),
		Entry("a ServiceAccount listing 9 image pull secrets", developer, serviceAccountListing(true), maxServiceAccountRef,
			maxServiceAccountRef+1, "at most 8 imagePullSecrets"),
		Entry("a space role binding of 20,000 subjects (N1)", spaceManagerRole, binding("cf-space-auditor", withSubjects), maxSubjects, 20_000,
			"at most 16 subjects"),
		Entry("a space role binding naming a subject in 257 characters", spaceManagerRole, binding("cf-space-auditor", withSubjectName),
			maxSubjectName, maxSubjectName+1, "subject names of at most 256 characters"),
		Entry("a space role binding with 5 KiB of annotations", spaceManagerRole, bindingMeta("cf-space-developer", withMetadataBytes),
			maxMetadataBytes, 5*1024, "at most 4 KiB of label and annotation keys and values"),
		Entry("an org role binding of 17 subjects, which HNC copies into every space (N1)", orgManagerRole,
			binding("cf-org-user", withSubjects), maxSubjects, maxSubjects+1, "at most 16 subjects"),
		Entry("an org role binding of 33 labels", orgManagerRole, bindingMeta("cf-org-user", withLabels), maxLabels, maxLabels+1,
			"at most 32 labels"),
	)

	It("let HNC copy an org's bindings into its spaces, operators, Kubernetes and cf-hnc's manager write beyond them, and a tenant keep what was there before", func(ctx SpecContext) {
		By("an operator's org binding beyond the bounds, which the bounds leave to operators")
		big := binding("cf-org-user", withSubjects)(org, 20).(*rbacv1.RoleBinding)
		big.Labels = labels(nil, 40)
		Expect(k8s.Create(ctx, big)).To(Succeed())

		By("HNC's copy of it in the space")
		Eventually(func(g Gomega) {
			copied := &rbacv1.RoleBinding{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: big.Name}, copied)).To(Succeed())
			g.Expect(copied.Labels).To(HaveKeyWithValue(hncv1alpha2.LabelInheritedFrom, org))
			g.Expect(copied.Subjects).To(HaveLen(20))
		}).Should(Succeed())

		By("the org manager may shrink it, not grow it")
		orgManager := as[orgManagerRole]
		Expect(orgManager.Get(ctx, client.ObjectKeyFromObject(big), big)).To(Succeed())
		grown := big.DeepCopy()
		grown.Subjects = append(grown.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "one-more"})
		Expect(orgManager.Update(ctx, grown)).To(refusedWith("at most 16 subjects"))
		grown = big.DeepCopy()
		grown.Labels["example.org/one-more"] = "x"
		Expect(orgManager.Update(ctx, grown)).To(refusedWith("at most 32 labels"))
		big.Subjects = big.Subjects[1:]
		delete(big.Labels, "example.org/l0")
		Expect(orgManager.Update(ctx, big)).To(Succeed(), "fewer subjects and labels than it had, though more than the bounds")

		By("Kubernetes' root CA publisher writing a large CA bundle into the space")
		publisher := impersonating("system:serviceaccount:kube-system:root-ca-cert-publisher",
			"system:serviceaccounts", "system:serviceaccounts:kube-system")
		Expect(publisher.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "kube-root-ca.crt"},
			Data: map[string]string{"ca.crt": strings.Repeat("c", 2*maxDataBytes)}})).To(Succeed())

		By("cf-hnc's manager writing what it writes: an app's web process and a rebuild")
		app := newApp(space)
		Expect(k8s.Create(ctx, app)).To(Succeed())
		web := &cfv1alpha1.CFProcess{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: app.Name + "-web",
				Labels: map[string]string{cfv1alpha1.AppLabel: app.Name, cfv1alpha1.ProcessTypeLabel: "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp",
					Name: app.Name, UID: app.UID}}},
			Spec: cfv1alpha1.CFProcessSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}, ProcessType: "web",
				Instances: 1, MemoryMB: 1024, DiskMB: 1024,
				HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60}},
		}
		Expect(manager().Create(ctx, web)).To(Succeed())
		rebuild := newBuild(space)
		rebuild.Labels = labels(map[string]string{"workloads.cloudfoundry.org/rebuild-of": "x"}, 40)
		Expect(manager().Create(ctx, rebuild)).To(Succeed(), "the manager holds what operators hold")
	})
})

// A metadata shape: n of something on an object's metadata.
type shape func(meta *metav1.ObjectMeta, n int)

// labels adds n labels to those given.
func labels(given map[string]string, n int) map[string]string {
	if given == nil {
		given = map[string]string{}
	}
	for i := range n {
		given[fmt.Sprintf("example.org/l%d", i)] = "v"
	}
	return given
}

func withLabels(meta *metav1.ObjectMeta, n int) { meta.Labels = labels(meta.Labels, n) }

func withAnnotations(meta *metav1.ObjectMeta, n int) {
	meta.Annotations = map[string]string{}
	for i := range n {
		meta.Annotations[fmt.Sprintf("example.org/a%d", i)] = "v"
	}
}

// withMetadataBytes sets one annotation whose key and value take n bytes.
func withMetadataBytes(meta *metav1.ObjectMeta, n int) {
	const key = "example.org/blob"
	meta.Annotations = map[string]string{key: strings.Repeat("x", n-len(key))}
}

func withFinalizers(meta *metav1.ObjectMeta, n int) {
	for i := range n {
		meta.Finalizers = append(meta.Finalizers, fmt.Sprintf("example.org/f%d", i))
	}
}

func withOwners(meta *metav1.ObjectMeta, n int) {
	for i := range n {
		meta.OwnerReferences = append(meta.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
			Name: fmt.Sprintf("owner-%d", i), UID: types.UID(uuid.NewUUID())})
	}
}

func cfApp(s shape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		app := newApp(ns)
		s(&app.ObjectMeta, n)
		return app
	}
}

func cfBuild(s shape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		build := newBuild(ns)
		s(&build.ObjectMeta, n)
		return build
	}
}

func cfPackage(s shape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		pkg := &cfv1alpha1.CFPackage{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: "app"},
				Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: "registry.example.org/source"}}},
		}
		s(&pkg.ObjectMeta, n)
		return pkg
	}
}

func secret(s shape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("secret")}}
		s(&obj.ObjectMeta, n)
		return obj
	}
}

func configMap(s shape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("config")}}
		s(&obj.ObjectMeta, n)
		return obj
	}
}

// secretOfBytes is a Secret with one key whose key and value take n bytes.
func secretOfBytes(ns string, n int) client.Object {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("secret")},
		Data: map[string][]byte{"blob": []byte(strings.Repeat("x", n-len("blob")))}}
}

func secretOfKeys(ns string, n int) client.Object {
	data := map[string][]byte{}
	for i := range n {
		data[fmt.Sprintf("k%d", i)] = []byte("v")
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("secret")}, Data: data}
}

func configMapOfBytes(ns string, n int) client.Object {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("config")},
		Data: map[string]string{"blob": strings.Repeat("x", n-len("blob"))}}
}

func configMapOfKeys(ns string, n int) client.Object {
	data := map[string]string{}
	for i := range n {
		data[fmt.Sprintf("k%d", i)] = "v"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("config")}, Data: data}
}

func serviceAccountListing(pullSecrets bool) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name("account")}}
		for i := range n {
			if pullSecrets {
				sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: fmt.Sprintf("pull-%d", i)})
			} else {
				sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: fmt.Sprintf("secret-%d", i)})
			}
		}
		return sa
	}
}

// A RoleBinding shape.
type bindingShape func(b *rbacv1.RoleBinding, n int)

func withSubjects(b *rbacv1.RoleBinding, n int) {
	b.Subjects = nil
	for i := range n {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: fmt.Sprintf("user-%d", i)})
	}
}

func withSubjectName(b *rbacv1.RoleBinding, n int) {
	b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: strings.Repeat("u", n)}}
}

// binding is a RoleBinding of a CF role to one user, shaped.
func binding(clusterRole string, s bindingShape) func(string, int) client.Object {
	return func(ns string, n int) client.Object {
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(clusterRole)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "someone"}},
		}
		s(b, n)
		return b
	}
}

// bindingMeta is a binding whose metadata is shaped.
func bindingMeta(clusterRole string, s shape) func(string, int) client.Object {
	return binding(clusterRole, func(b *rbacv1.RoleBinding, n int) { s(&b.ObjectMeta, n) })
}

func newApp(space string) *cfv1alpha1.CFApp {
	return &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{DisplayName: name("app"), DesiredState: cfv1alpha1.StoppedState,
			Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
}

func newBuild(space string) *cfv1alpha1.CFBuild {
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app"},
			PackageRef: corev1.LocalObjectReference{Name: "package"}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
}
