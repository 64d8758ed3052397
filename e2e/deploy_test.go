package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// What an operator gets from config/default: the specs labelled "cluster" hold for the
// local control plane and for any cluster cf-hnc is deployed to; the "local" ones check how
// faithfully the local control plane runs the deployed manager.
var _ = Describe("cf-hnc as deployed", Label(clusterLabel), func() {
	It("serves its webhooks with the certificate it rotates itself, and they reject what they must", func(ctx SpecContext) {
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: install.WebhookSecret}, secret)).To(Succeed())
		ca := x509.NewCertPool()
		Expect(ca.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue(), "the Secret holds the rotator's CA")
		block, _ := pem.Decode(secret.Data["tls.crt"])
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		_, err = cert.Verify(x509.VerifyOptions{Roots: ca, DNSName: "cf-hnc-webhook-service." + install.Namespace + ".svc"})
		Expect(err).NotTo(HaveOccurred(), "the serving certificate is the CA's, for the webhook Service")

		validating := &admissionv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: install.ValidatingWebhookConfiguration}, validating)).To(Succeed())
		mutating := &admissionv1.MutatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: install.MutatingWebhookConfiguration}, mutating)).To(Succeed())
		Expect(validating.Webhooks).NotTo(BeEmpty())
		Expect(mutating.Webhooks).NotTo(BeEmpty())
		for _, hook := range validating.Webhooks {
			Expect(hook.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), "webhook %s trusts the rotated CA", hook.Name)
		}
		for _, hook := range mutating.Webhooks {
			Expect(hook.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), "webhook %s trusts the rotated CA", hook.Name)
		}

		By("the apiserver calling the webhook over TLS, which rejects an org outside the root namespace")
		org := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uuid.NewUUID())}, Spec: cfv1alpha1.CFOrgSpec{DisplayName: "x"}}
		Expect(k8s.Create(ctx, org)).To(MatchError(And(ContainSubstring("vcforg.workloads.cloudfoundry.org"), ContainSubstring("orgs are created in the root namespace"))))
	})

	It("elects a leader in its namespace, which keeps renewing the lease", func(ctx SpecContext) {
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: install.Namespace, Name: "cf-hnc.workloads.cloudfoundry.org"}
		Expect(k8s.Get(ctx, key, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
		renewed := lease.Spec.RenewTime.Time
		Eventually(func() time.Time {
			Expect(k8s.Get(ctx, key, lease)).To(Succeed())
			return lease.Spec.RenewTime.Time
		}, 30*time.Second).Should(BeTemporally(">", renewed))
	})

	It("makes an org and its space from their CF objects, and removes them with the org", func(ctx SpecContext) {
		org := createOrg(ctx, "deployed-"+string(uuid.NewUUID())[:8])
		space := createSpace(ctx, org, "dev")
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(root+".tree.hnc.x-k8s.io/depth", "2"))

		Expect(k8s.Delete(ctx, &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}})).To(Succeed())
		for _, name := range []string{space, org} {
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}) }, 2*time.Minute).
				Should(BeNotFound(), "namespace %s is deleted with the org", name)
		}
	})

	// The sample Builder is left out: kpack would push to the sample's registry.example.com.
	It("takes config/samples: an org, a space, the org's credentials and ServiceAccount reach the space", func(ctx SpecContext) {
		samples, err := install.Build(projectConfig(), install.Samples, "")
		Expect(err).NotTo(HaveOccurred())
		_, samples = splitKind(samples, "Builder")
		orgs, rest := splitKind(samples, "CFOrg")
		Expect(orgs).To(HaveLen(1))
		org := orgs[0].GetName()
		inCluster(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}))).To(Succeed())
		})
		Expect(install.Apply(ctx, k8s, orgs)).To(Succeed())
		Eventually(condition(ctx, &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}})).
			Should(HaveField("Status", metav1.ConditionTrue))
		Expect(install.Apply(ctx, k8s, rest)).To(Succeed())

		spaces, _ := splitKind(rest, "CFSpace")
		Expect(spaces).To(HaveLen(1))
		space := spaces[0].GetName()
		Eventually(condition(ctx, &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: space}})).
			Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "cf-registry-org"}, &corev1.Secret{})
		}).Should(Succeed(), "the org's credentials are copied into the space")
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "cf-build-org"}, &corev1.ServiceAccount{})
		}).Should(Succeed(), "the org's build ServiceAccount is copied into the space")
	})
})

var _ = Describe("The deployed manager on the local control plane", Label(localLabel), func() {
	It("runs in each of its pods the image and the args of the applied Deployment", func(ctx SpecContext) {
		deployment := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: install.ManagerDeployment}, deployment)).To(Succeed())
		var container corev1.Container
		for _, c := range deployment.Spec.Template.Spec.Containers {
			if c.Name == install.ManagerContainer {
				container = c
			}
		}
		Expect(container.Image).To(Equal(cp.DeployedImage()), "the image built from this tree, by digest")
		Expect(container.Args).To(ContainElement("--leader-election-identity=$(POD_NAME)"), "a pod holds the lease under its own name")
		Expect(container.Args).To(ContainElements("--leader-elect=true", "--cert-rotation=true", "--enable-webhooks=true"))

		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(install.Namespace), client.MatchingLabels(deployment.Spec.Selector.MatchLabels))).To(Succeed())
		Expect(pods.Items).To(HaveLen(int(*deployment.Spec.Replicas)))
		for _, pod := range pods.Items {
			Expect(pod.Status.ContainerStatuses).To(ContainElement(And(HaveField("Name", install.ManagerContainer),
				HaveField("ImageID", HaveSuffix(strings.SplitN(cp.DeployedImage(), "@", 2)[1])))), "pod %s pulled it", pod.Name)
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", containerPID(&pod, install.ManagerContainer)))
			Expect(err).NotTo(HaveOccurred())
			running := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
			expanded := strings.ReplaceAll(strings.Join(container.Args, "\x00"), "$(POD_NAME)", pod.Name)
			Expect(running).To(Equal(append([]string{"/ko-app/cf-hnc"}, strings.Split(expanded, "\x00")...)),
				"pod %s runs the image's command with the Deployment's args, nothing changed", pod.Name)
		}
	})

	It("acts as the deployed ServiceAccount, so that its RBAC and the manager policy apply to it", func(ctx SpecContext) {
		pid, err := cp.ManagerPID(ctx)
		Expect(err).NotTo(HaveOccurred())
		token, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", pid))
		Expect(err).NotTo(HaveOccurred(), "the token the kubelet mounted into the leader's pod")
		cfg := rest.AnonymousClientConfig(cp.Config)
		cfg.BearerToken = string(token)
		asManager, err := client.New(cfg, client.Options{Scheme: cfscheme.New()})
		Expect(err).NotTo(HaveOccurred())
		review := &authenticationv1.SelfSubjectReview{}
		Expect(asManager.Create(ctx, review)).To(Succeed())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + install.Namespace + ":" + install.ServiceAccount))
		Expect(review.Status.UserInfo.Groups).To(ContainElements("system:serviceaccounts", "system:serviceaccounts:"+install.Namespace))

		ns := createNamespace(ctx)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside"}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"true"}}}`))
		Expect(asManager.Patch(ctx, secret, patch)).To(MatchError(ContainSubstring("cf-hnc writes only in the CF tree")),
			"RBAC lets it patch Secrets anywhere; the policy keeps it in the CF tree")
		Expect(asManager.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})).
			To(WithTransform(apierrors.IsForbidden, BeTrue()), "its ClusterRole grants no ConfigMaps")
	})

	It("answers metrics only to a client allowed to read them", func(ctx SpecContext) {
		ns := createNamespace(ctx)
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
		Expect(k8s.Create(ctx, sa)).To(Succeed())
		scrape := func(token string) func() (int, error) {
			return func() (int, error) {
				metrics, err := cp.ManagerMetrics(ctx)
				if err != nil {
					return 0, err
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metrics+"/metrics", nil)
				if err != nil {
					return 0, err
				}
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				// The endpoint's certificate is self-signed; what is checked here is the token.
				c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
				resp, err := c.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
		}
		request := &authenticationv1.TokenRequest{}
		Expect(k8s.SubResource("token").Create(ctx, sa, request)).To(Succeed())
		token := request.Status.Token

		Eventually(scrape("")).Should(Equal(http.StatusUnauthorized))
		Eventually(scrape("not-a-token")).Should(Equal(http.StatusUnauthorized))
		Eventually(scrape(token)).Should(Equal(http.StatusForbidden))
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-" + ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-hnc-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
		})).To(Succeed())
		Eventually(scrape(token)).Should(Equal(http.StatusOK))
	})
})

// projectConfig is the project's config/.
func projectConfig() string {
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	return wd + "/../config"
}

func splitKind(objs []*unstructured.Unstructured, kind string) (matching, rest []*unstructured.Unstructured) {
	for _, obj := range objs {
		if obj.GetKind() == kind {
			matching = append(matching, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	return matching, rest
}

// condition returns obj's Ready condition, read again at each call.
func condition(ctx SpecContext, obj interface {
	client.Object
	GetConditions() []metav1.Condition
}) func() *metav1.Condition {
	return func() *metav1.Condition {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition)
	}
}

// containerPID is the process of a container of a pod of the node, on this machine.
func containerPID(pod *corev1.Pod, container string) int {
	GinkgoHelper()
	pids, err := cp.ContainerPIDs(pod, container)
	Expect(err).NotTo(HaveOccurred())
	return pids[0]
}
