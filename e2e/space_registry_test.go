package e2e_test

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// An operator gives one space a registry account and a droplet repository of its own, outside
// any org's (kubectl cf set-registry ORG SPACE --droplet-repository), and places nothing at the
// org: the space builds with what is its own alone.
var _ = Describe("A space with a registry of its own", func() {
	It("stages a push under the space's own repository, outside the org's, with the space's account, and nothing placed at the org", func(ctx SpecContext) {
		orgName := "own-registry-" + string(uuid.NewUUID())[:8]
		org := createOrg(ctx, orgName)
		space := createSpace(ctx, org, "dev")
		host, repository := cp.Kpack().Registry.Host(), "space-registries/"+space
		registryUser(repository)
		account, password := registryCredentials(repository)

		out := cf("set-registry", org, space, "--server", host, "--username", account, "--password", password,
			"--droplet-repository", host+"/"+repository)
		Expect(out).To(ContainSubstring(fmt.Sprintf("droplets of space %q of org %q go to %s/%s\n", "dev", orgName, host, repository)))
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		placedAtOrg := &corev1.SecretList{}
		Expect(k8s.List(ctx, placedAtOrg, client.InNamespace(org), client.MatchingLabels(buildConfig))).To(Succeed())
		Expect(placedAtOrg.Items).To(BeEmpty(), "no registry at the org")

		cf("push", "web", "-n", space, "-p", appSource(), "--no-start")
		apps := &cfv1alpha1.CFAppList{}
		Expect(k8s.List(ctx, apps, client.InNamespace(space))).To(Succeed())
		Expect(apps.Items).To(HaveLen(1))
		app := apps.Items[0]
		droplet := getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Status.Droplet
		Expect(droplet.Registry.Image).To(HavePrefix(host + "/" + repository + "/" + app.Name + "@sha256:"))
		Expect(droplet.Registry.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "cf-registry-space"}))
		pusher, ok := cp.Kpack().Registry.PushedBy(droplet.Registry.Image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(account), "pushed with the space's own account")
		Expect(pull(droplet.Registry.Image, remote.WithAuth(&authn.Basic{Username: account, Password: password}))).To(Succeed(),
			"the droplet is in the space's repository, where the space's account reads it")
	})
})
