package e2e_test

import (
	"context"
	"fmt"
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// The smoke specs show that the real parts of the local control plane work together, before
// any cf-hnc object is involved; against a cluster, that HNC and Kubernetes do what cf-hnc
// relies on.
var _ = Describe("The local control plane", Label(clusterLabel), func() {
	It("makes a subnamespace from an anchor and propagates a Secret marked for propagation", func(ctx SpecContext) {
		parent := createNamespace(ctx)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: "shared",
			Annotations: map[string]string{hncv1alpha2.AnnotationAllSelector: "true"}},
			StringData: map[string]string{"key": "value"}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		child := createAnchor(ctx, parent)

		copied := &corev1.Secret{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: child, Name: "shared"}, copied) }).Should(Succeed())
		Expect(copied.Data).To(HaveKeyWithValue("key", []byte("value")))
		Expect(copied.Labels).To(HaveKeyWithValue(hncv1alpha2.LabelInheritedFrom, parent))

		By("HNC's webhook rejecting an edit of the propagated copy")
		copied.Data["key"] = []byte("changed")
		err := k8s.Update(ctx, copied)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("hnc.x-k8s.io"))
	})

	It("finishes deleting a namespace (kube-controller-manager)", func(ctx SpecContext) {
		ns := createNamespace(ctx)
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "content"}})).To(Succeed())
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) }).
			Should(WithTransform(apierrors.IsNotFound, BeTrue()))
	})

	It("has the apiserver call every admission webhook through its Service, at pods of the node's own network", Label(localLabel), func(ctx SpecContext) {
		var configs []admissionv1.WebhookClientConfig
		validating := &admissionv1.ValidatingWebhookConfigurationList{}
		Expect(k8s.List(ctx, validating)).To(Succeed())
		for _, c := range validating.Items {
			for _, hook := range c.Webhooks {
				configs = append(configs, hook.ClientConfig)
			}
		}
		mutating := &admissionv1.MutatingWebhookConfigurationList{}
		Expect(k8s.List(ctx, mutating)).To(Succeed())
		for _, c := range mutating.Items {
			for _, hook := range c.Webhooks {
				configs = append(configs, hook.ClientConfig)
			}
		}
		Expect(configs).NotTo(BeEmpty())
		for _, config := range configs {
			Expect(config.URL).To(BeNil(), "as the manifests say: no URL")
			Expect(config.Service).NotTo(BeNil())
			slices := &discoveryv1.EndpointSliceList{}
			Expect(k8s.List(ctx, slices, client.InNamespace(config.Service.Namespace),
				client.MatchingLabels{discoveryv1.LabelServiceName: config.Service.Name})).To(Succeed())
			var addresses []string
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					addresses = append(addresses, e.Addresses...)
				}
			}
			Expect(addresses).NotTo(BeEmpty(), "Service %s/%s has endpoints", config.Service.Namespace, config.Service.Name)
			for _, a := range addresses {
				Expect(cp.PodNetwork().Contains(net.ParseIP(a))).To(BeTrue(), "%s is on the node's pod network %s", a, cp.PodNetwork())
			}
		}
	})

	It("keeps HNC's object webhook, which fails closed, out of cf-hnc's and kpack's namespaces", Label(localLabel), func(ctx SpecContext) {
		for _, name := range []string{"cf-hnc-system", "kpack"} {
			ns := &corev1.Namespace{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
			Expect(ns.Labels).NotTo(HaveKey(hncv1alpha2.LabelIncludedNamespace), "namespace %s", name)
		}
		Eventually(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: root}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue(hncv1alpha2.LabelIncludedNamespace, "true"))
		}).Should(Succeed(), "the CF tree is HNC's")
		hooks := &admissionv1.ValidatingWebhookConfigurationList{}
		Expect(k8s.List(ctx, hooks)).To(Succeed())
		var objects *admissionv1.ValidatingWebhook
		for i := range hooks.Items {
			for j := range hooks.Items[i].Webhooks {
				if hooks.Items[i].Webhooks[j].Name == "objects.hnc.x-k8s.io" {
					objects = &hooks.Items[i].Webhooks[j]
				}
			}
		}
		Expect(objects).NotTo(BeNil())
		Expect(objects.NamespaceSelector.MatchLabels).To(HaveKeyWithValue(hncv1alpha2.LabelIncludedNamespace, "true"))
	})

	It("makes a kpack Builder Ready against the local registry, and an Image gets a Build", Label(localLabel), func(ctx SpecContext) {
		ns := createNamespace(ctx)
		sa := registryServiceAccount(ctx, ns)
		builder := cp.Kpack().Builder(ns, "builder", sa, fmt.Sprintf("%s/%s/builder", cp.Kpack().Registry.Host(), ns))
		Expect(k8s.Create(ctx, builder)).To(Succeed())
		Eventually(func() bool {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(builder), builder)).To(Succeed())
			return builder.Status.GetCondition(corev1alpha1.ConditionReady).IsTrue()
		}).Should(BeTrue(), "Builder status: %+v", &builder.Status)
		Expect(builder.Status.LatestImage).To(HavePrefix(cp.Kpack().Registry.Host() + "/" + ns + "/builder"))

		image := &kpackv1alpha2.Image{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: kpackv1alpha2.ImageSpec{
				Tag:                fmt.Sprintf("%s/%s/app", cp.Kpack().Registry.Host(), ns),
				Builder:            corev1.ObjectReference{Kind: kpackv1alpha2.BuilderKind, Name: builder.Name},
				ServiceAccountName: sa,
				Source:             corev1alpha1.SourceConfig{Registry: &corev1alpha1.Registry{Image: cp.Kpack().Images.Stack.RunImage.Pinned()}},
			},
		}
		Expect(k8s.Create(ctx, image)).To(Succeed())
		Eventually(func() []kpackv1alpha2.Build {
			builds := &kpackv1alpha2.BuildList{}
			Expect(k8s.List(ctx, builds, client.InNamespace(ns))).To(Succeed())
			return builds.Items
		}).Should(ContainElement(HaveField("Spec.Tags", ContainElement(image.Spec.Tag))))
	})
})

// createNamespace creates a namespace with a fresh name.
func createNamespace(ctx SpecContext) string {
	name := "e2e-" + string(uuid.NewUUID())[:8]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	inCluster(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return name
}

// createAnchor creates a SubnamespaceAnchor and waits until HNC made the namespace.
func createAnchor(ctx SpecContext, parent string) string {
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: parent + "-child"}}
	Expect(k8s.Create(ctx, anchor)).To(Succeed())
	// HNC deletes the subnamespace with its anchor, and refuses to delete a namespace that
	// still has one: the anchor goes first (cleanups run in reverse order).
	inCluster(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, anchor))).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(anchor), anchor)) }).Should(BeTrue())
	})
	Eventually(func() hncv1alpha2.SubnamespaceAnchorState {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(anchor), anchor)).To(Succeed())
		return anchor.Status.State
	}).Should(Equal(hncv1alpha2.Ok))
	return anchor.Name
}

// registryUser adds a registry user who may push under "<prefix>/" and returns a docker config
// for it.
func registryUser(prefix string) []byte {
	user, password := registryUserName(prefix), "password-"+string(uuid.NewUUID())
	Expect(cp.Kpack().Registry.AddUser(registry.User{Name: user, Password: password, Prefixes: []string{prefix + "/"}})).To(Succeed())
	passwords[user] = password
	return controlplane.DockerConfig(cp.Kpack().Registry.Host(), user, password)
}

// passwords are those of the registry users the specs made.
var passwords = map[string]string{}

func registryUserName(prefix string) string { return "user-" + prefix }

// registryCredentials are the registry user and password of a prefix.
func registryCredentials(prefix string) (user, password string) {
	user = registryUserName(prefix)
	return user, passwords[user]
}

// registryServiceAccount creates a ServiceAccount with push rights under "<ns>/".
func registryServiceAccount(ctx SpecContext, ns string) string {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registryUser(ns)},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	sa := &corev1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Namespace: ns, Name: "builds"},
		Secrets:          []corev1.ObjectReference{{Name: secret.Name}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: secret.Name}},
	}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	return sa.Name
}
