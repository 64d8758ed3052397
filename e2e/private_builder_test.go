package e2e_test

import (
	"context"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// privateBuilders is the private builder repository of these specs, on the droplets' registry
// host, outside the public prefix.
const privateBuilders = "private-builders/"

// The root's default Builder, and the run image kpack relocates beside it, in a private
// repository of the droplets' registry host (ADR 6 "Credentials"). kpack builds with one
// credential per registry host, the org's droplet credential, so the registry grants the org's
// account pull, and only pull, on the builder repository; nothing is placed for it in the tree.
var _ = Describe("A default Builder in a private repository of the droplets' registry", func() {
	It("builds and runs a space developer's push with the org's account granted pull there, which cannot push there", func(ctx SpecContext) {
		host := cp.Kpack().Registry.Host()
		builderRepository := host + "/" + privateBuilders + "default"
		moveRootBuilder(ctx, builderRepository)
		clusterBuilder := &kpackv1alpha2.ClusterBuilder{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: buildconfig.ClusterBuilderName(root, controlplane.DefaultBuilder)}, clusterBuilder)).To(Succeed())
		Expect(clusterBuilder.Status.Stack.RunImage).To(HavePrefix(host+"/"+privateBuilders), "kpack relocated the run image beside the builder image")

		org := createOrg(ctx, "private-builder-"+string(uuid.NewUUID())[:8])
		space := createSpace(ctx, org, "dev")
		placeOrgRegistry(ctx, org)
		account, password := registryCredentials(org)
		orgAccount := remote.WithAuth(&authn.Basic{Username: account, Password: password})
		for _, image := range []string{clusterBuilder.Status.LatestImage, clusterBuilder.Status.Stack.RunImage} {
			Expect(pull(image, remote.WithAuth(authn.Anonymous))).To(BeDeniedByTheRegistry(), "the builder repository is private")
			Expect(pull(image, orgAccount)).To(BeDeniedByTheRegistry(), "the org's account may not read it before the registry grants it")
		}

		By("the registry granting the org's account pull on the builder repository, as the operator does for every org")
		Expect(cp.Kpack().Registry.AddUser(registry.User{Name: account, Password: password,
			Prefixes: []string{org + "/"}, PullPrefixes: []string{privateBuilders}})).To(Succeed())
		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cfv1alpha1.BuildConfigCompleteReason)))
		s := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
		Expect(s.Status.Build.Builder.LatestImage).To(HavePrefix(builderRepository + ":"))
		Expect(s.Status.Build.RegistryCredentials).To(ConsistOf(cfv1alpha1.RegistryCredential{
			Registry: host, Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: org}}), "one credential for the host: the org's")

		developer := "dev-" + string(uuid.NewUUID())[:8]
		dev := spaceDeveloper(ctx, developer, space)
		out := cf("push", "web", "-n", space, "-p", appSource(), "--as", developer)
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STARTED with droplet ([0-9a-f-]{36}):$`))
		Expect(out).To(MatchRegexp(`(?m)^  run image:\s+%s@sha256:[0-9a-f]{64}$`, regexp.QuoteMeta(builderRepository)), "the run image kpack relocated into the private repository")
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+InstancesRunning: web 1/1 running$`))
		apps := &cfv1alpha1.CFAppList{}
		Expect(k8s.List(ctx, apps, client.InNamespace(space))).To(Succeed())
		Expect(apps.Items).To(HaveLen(1))
		droplet := getBuild(ctx, space, apps.Items[0].Spec.CurrentDropletRef.Name).Status.Droplet
		Expect(droplet.Registry.Image).To(HavePrefix(host + "/" + org + "/"))
		pusher, ok := cp.Kpack().Registry.PushedBy(droplet.Registry.Image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(account), "the droplet was pushed with the org's account")

		By("the space developer taking the org's credentials from the space to the builder repository")
		copied := &corev1.Secret{}
		Expect(dev.Get(ctx, client.ObjectKey{Namespace: space, Name: "cf-registry-org"}, copied)).To(Succeed())
		creds, err := dockerconfig.Parse(copied)
		Expect(err).NotTo(HaveOccurred())
		developersAuth := remote.WithAuth(authn.FromConfig(creds[host]))
		Expect(pull(clusterBuilder.Status.LatestImage, developersAuth)).To(Succeed(), "builds in the space read the builder image")
		Expect(pushTo(builderRepository+":tenant", developersAuth)).To(BeDeniedByTheRegistry())
		Expect(pushTo(host+"/"+privateBuilders+"other:tenant", developersAuth)).To(BeDeniedByTheRegistry())
	})
})

// moveRootBuilder moves the root's default Builder to a builder repository, with push rights
// there for the account its ServiceAccount in the builder namespace pushes with, until the spec
// ends, and waits until its ClusterBuilder is Ready there.
func moveRootBuilder(ctx SpecContext, repository string) {
	GinkgoHelper()
	builder := &kpackv1alpha2.Builder{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: controlplane.DefaultBuilder}, builder)).To(Succeed())
	pushesWith := &corev1.ServiceAccount{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: controlplane.BuilderNamespace, Name: builder.Spec.ServiceAccountName}, pushesWith)).To(Succeed())
	credentials := &corev1.Secret{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: controlplane.BuilderNamespace, Name: pushesWith.Secrets[0].Name}, credentials)).To(Succeed())
	creds, err := dockerconfig.Parse(credentials)
	Expect(err).NotTo(HaveOccurred())
	operator := creds[cp.Kpack().Registry.Host()]
	Expect(operator.Username).To(Equal(controlplane.OperatorUser))
	grant := func(prefixes ...string) {
		Expect(cp.Kpack().Registry.AddUser(registry.User{Name: operator.Username, Password: operator.Password, Prefixes: prefixes})).To(Succeed())
	}
	publicBuilders := "cnb/builders/"
	grant(publicBuilders, privateBuilders)
	retag := func(ctx context.Context, tag string) {
		update(ctx, builder, func() { builder.Spec.Tag = tag })
		Eventually(func() string {
			cb := &kpackv1alpha2.ClusterBuilder{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: buildconfig.ClusterBuilderName(root, controlplane.DefaultBuilder)}, cb); err != nil || !buildconfig.Ready(&cb.Status, cb.Generation) {
				return ""
			}
			return cb.Status.LatestImage
		}, 2*time.Minute).Should(HavePrefix(tag + ":"))
	}
	publicTag := builder.Spec.Tag
	DeferCleanup(func(ctx SpecContext) {
		retag(ctx, publicTag)
		grant(publicBuilders)
	})
	retag(ctx, repository)
}
