// Package policies_test proves the admission policies of config/policies and the default
// quotas of config/quotas against the real kube-apiserver, with HNC (its webhooks and its
// propagation) and kube-controller-manager (quota usage, the StatefulSet controller, role
// aggregation) running, as config/default installs them. Every spec acts as the tenant or as
// cf-hnc's manager through impersonation, and shows beside each refusal the same write within
// the bound succeeding, so that no refusal passes for another reason.
package policies_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

const (
	root = controlplane.RootNamespace
	// The default quotas of config/quotas.
	spaceQuota = "cf-default-space-quota"
	orgQuota   = "cf-default-org-quota"
	// managerUser is cf-hnc's manager as the apiserver sees it.
	managerUser = "system:serviceaccount:" + install.Namespace + ":" + install.ServiceAccount
)

// configDir is the repository's config/, from this package's folder.
var configDir = filepath.Join("..", "config")

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
)

func TestPolicies(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "policies (apiserver, kube-controller-manager, HNC; config/default's policies and quotas)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	cp, err = controlplane.Start(ctx, controlplane.Options{WorkDir: filepath.Join(".local", "policies"), ControllerManager: true, HNC: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	k8s = cp.Client

	By("applying config/default's RBAC, admission policies and quotas, without the manager's Deployment and webhooks")
	objs, err := install.Build(configDir, install.Default, "")
	Expect(err).NotTo(HaveOccurred())
	Expect(install.Apply(ctx, k8s, withoutManager(objs))).To(Succeed())

	By("waiting until kube-controller-manager has type-checked every policy")
	Eventually(func(g Gomega) {
		policies := &admissionv1.ValidatingAdmissionPolicyList{}
		g.Expect(k8s.List(ctx, policies)).To(Succeed())
		g.Expect(policies.Items).NotTo(BeEmpty())
		for _, p := range policies.Items {
			g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation), p.Name)
			g.Expect(p.Status.TypeChecking).NotTo(BeNil(), p.Name)
		}
	}).Should(Succeed())

	By("waiting until the apiserver runs the mutating policy of the tree's Pod Security labels")
	probe := createOrg(ctx)
	Eventually(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: probe}, ns)).To(Succeed())
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			// Any write of a tree namespace brings the labels once the policy is loaded.
			patch := client.MergeFrom(ns.DeepCopy())
			ns.Labels["cf-hnc.test/touched"] = time.Now().Format("150405.000000")
			g.Expect(k8s.Patch(ctx, ns, patch)).To(Succeed())
		}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: probe}, ns)).To(Succeed())
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	}).Should(Succeed())

	By("waiting until the root's default quotas are in force")
	for _, name := range []string{spaceQuota, orgQuota} {
		Eventually(inForce(ctx, root, name)).ShouldNot(BeEmpty(), name)
	}
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(func() {
	if cp != nil {
		Expect(cp.Healthy()).To(Succeed())
	}
})

// withoutManager is config/default less what runs the manager (its Deployment, Services,
// PodDisruptionBudget and certificate Secret) and less its webhook configurations, which fail
// closed without it; the CRDs are the control plane's already.
func withoutManager(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	left := []string{"Deployment", "Service", "PodDisruptionBudget", "Secret", "CustomResourceDefinition",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
	return slices.DeleteFunc(slices.Clone(objs), func(obj *unstructured.Unstructured) bool {
		return slices.Contains(left, obj.GetKind())
	})
}

// createOrg makes an org namespace below the root as cf-hnc does (an HNC anchor with the org's
// GUID label), waits until HNC has made it and the default quotas are in force there, and
// returns its name.
func createOrg(ctx context.Context) string {
	GinkgoHelper()
	return createSubnamespace(ctx, root, "workloads.cloudfoundry.org/org-guid")
}

// createSpace makes a space namespace in an org, as createOrg does.
func createSpace(ctx context.Context, org string) string {
	GinkgoHelper()
	return createSubnamespace(ctx, org, "workloads.cloudfoundry.org/space-guid")
}

func createSubnamespace(ctx context.Context, parent, guidLabel string) string {
	GinkgoHelper()
	guid := string(uuid.NewUUID())
	anchor := &hncv1alpha2.SubnamespaceAnchor{
		ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: guid},
		Spec:       hncv1alpha2.SubnamespaceAnchorSpec{Labels: []hncv1alpha2.MetaKVP{{Key: guidLabel, Value: guid}}},
	}
	Expect(k8s.Create(ctx, anchor)).To(Succeed())
	Eventually(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: guid}, ns)).To(Succeed())
		g.Expect(ns.Labels).To(HaveKey(root + hncv1alpha2.LabelTreeDepthSuffix))
	}).Should(Succeed())
	for _, name := range []string{spaceQuota, orgQuota} {
		Eventually(inForce(ctx, guid, name)).ShouldNot(BeEmpty(), "%s in %s", name, guid)
	}
	return guid
}

// inForce returns the limits of a quota that the apiserver enforces in a namespace: those in its
// status, where kube-controller-manager puts them with their usage.
func inForce(ctx context.Context, namespace, name string) func() corev1.ResourceList {
	return func() corev1.ResourceList {
		quota := &corev1.ResourceQuota{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, quota); err != nil {
			return nil
		}
		enforced := corev1.ResourceList{}
		for resourceName, limit := range quota.Status.Hard {
			if _, counted := quota.Status.Used[resourceName]; counted {
				enforced[resourceName] = limit
			}
		}
		return enforced
	}
}

// impersonating returns a client that acts as user, in groups and system:authenticated.
func impersonating(user string, groups ...string) client.Client {
	GinkgoHelper()
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(slices.Clip(groups), "system:authenticated")}
	c, err := client.New(config, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// manager is cf-hnc's manager: its ServiceAccount, with the RBAC of config/rbac.
func manager() client.Client {
	GinkgoHelper()
	return impersonating(managerUser, "system:serviceaccounts", "system:serviceaccounts:"+install.Namespace)
}

// spaceDeveloper binds a new user to cf-space-developer in a space and cf-org-user in its org, as
// Cloud Foundry makes every member of a space, and returns a client that acts as that user.
func spaceDeveloper(ctx context.Context, org, space string) client.Client {
	GinkgoHelper()
	user := "developer-" + string(uuid.NewUUID())[:8]
	bindRole(ctx, org, user, "cf-org-user")
	bindRole(ctx, space, user, "cf-space-developer")
	dev := impersonating(user)
	// The role's rules come from the aggregation controller, a moment after the role exists.
	Eventually(func() error { return dev.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(space)) }).Should(Succeed())
	return dev
}

// spaceManager binds a new user to cf-space-manager in a space.
func spaceManager(ctx context.Context, org, space string) client.Client {
	GinkgoHelper()
	user := "space-manager-" + string(uuid.NewUUID())[:8]
	bindRole(ctx, org, user, "cf-org-user")
	bindRole(ctx, space, user, "cf-space-manager")
	c := impersonating(user)
	Eventually(func() error { return c.List(ctx, &rbacv1.RoleBindingList{}, client.InNamespace(space)) }).Should(Succeed())
	return c
}

// orgManager binds a new user to cf-org-manager in an org.
func orgManager(ctx context.Context, org string) client.Client {
	GinkgoHelper()
	user := "org-manager-" + string(uuid.NewUUID())[:8]
	bindRole(ctx, org, user, "cf-org-manager")
	c := impersonating(user)
	Eventually(func() error { return c.List(ctx, &rbacv1.RoleBindingList{}, client.InNamespace(org)) }).Should(Succeed())
	return c
}

// bindRole binds a ClusterRole to a user in a namespace, as an administrator.
func bindRole(ctx context.Context, namespace, user, role string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
}

// BeForbidden matches a Forbidden error.
func BeForbidden() OmegaMatcher {
	return And(HaveOccurred(), WithTransform(apierrors.ReasonForError, Equal(metav1.StatusReasonForbidden)))
}

// refusedWith matches a Forbidden error whose message holds every part.
func refusedWith(parts ...string) OmegaMatcher {
	matchers := []OmegaMatcher{BeForbidden(), WithTransform(func(err error) string { return err.Error() }, Not(BeEmpty()))}
	for _, part := range parts {
		matchers = append(matchers, MatchError(ContainSubstring(part)))
	}
	return And(matchers...)
}

// name is a fresh object name with a prefix.
func name(prefix string) string { return prefix + "-" + strings.ToLower(string(uuid.NewUUID())[:8]) }
