package orgspace_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
	orgspace "code.cloudfoundry.org/cf-hnc/org-space"
)

var _ = Describe("Orgs and spaces", func() {
	It("makes an org namespace under the root and a space namespace under the org", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		space := newSpace(org.Name, "dev")
		Expect(k8s.Create(ctx, space)).To(Succeed())
		Eventually(readiness(ctx, space)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))

		orgNS := namespace(ctx, org.Name)
		Expect(orgNS.Labels).To(HaveKeyWithValue(cfv1alpha1.OrgGUIDLabel, org.Name))
		Expect(orgNS.Labels).NotTo(HaveKey(cfv1alpha1.SpaceGUIDLabel))
		Expect(orgNS.Annotations).To(HaveKeyWithValue(cfv1alpha1.OrgNameAnnotation, org.Spec.DisplayName))
		Expect(orgNS.Labels).To(HaveKeyWithValue(root+".tree.hnc.x-k8s.io/depth", "1"))

		spaceNS := namespace(ctx, space.Name)
		Expect(spaceNS.Labels).To(HaveKeyWithValue(cfv1alpha1.SpaceGUIDLabel, space.Name))
		Expect(spaceNS.Labels).To(HaveKeyWithValue(cfv1alpha1.OrgGUIDLabel, org.Name))
		Expect(spaceNS.Labels).To(HaveKeyWithValue(org.Name+".tree.hnc.x-k8s.io/depth", "1"))
		Expect(spaceNS.Labels).To(HaveKeyWithValue(root+".tree.hnc.x-k8s.io/depth", "2"))
		Expect(spaceNS.Annotations).To(HaveKeyWithValue(cfv1alpha1.SpaceNameAnnotation, "dev"))
	})

	It("leaves writing the namespaces to HNC, which puts their GUID labels back when somebody changes them", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		space := createSpace(ctx, org.Name, "dev")

		for _, ns := range []*corev1.Namespace{namespace(ctx, org.Name), namespace(ctx, space.Name)} {
			for _, entry := range ns.ManagedFields {
				Expect(entry.Manager).NotTo(HavePrefix("cf-hnc"), "namespace %s: HNC re-syncs the tree on every change of one", ns.Name)
			}
		}
		spaceNS := namespace(ctx, space.Name)
		spaceNS.Labels[cfv1alpha1.SpaceGUIDLabel] = "another-space"
		Expect(k8s.Update(ctx, spaceNS)).To(Succeed())
		Eventually(func() map[string]string { return namespace(ctx, space.Name).Labels }).
			Should(HaveKeyWithValue(cfv1alpha1.SpaceGUIDLabel, space.Name))
	})

	It("takes over the anchor of a space that a release before the anchor label made", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		space := newSpace(org.Name, "dev")
		// What an earlier release left: an anchor without cf-hnc's label, and its namespace.
		anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: space.Name}}
		Expect(k8s.Create(ctx, anchor)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: space.Name}, &corev1.Namespace{}) }).Should(Succeed())

		Expect(k8s.Create(ctx, space)).To(Succeed())
		Eventually(readiness(ctx, space)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(anchor), anchor)).To(Succeed())
		Expect(orgspace.AnchorSelector.Matches(labels.Set(anchor.Labels))).To(BeTrue(), "labelled as cf-hnc labels the anchors it makes")
		Expect(namespace(ctx, space.Name).Labels).To(HaveKeyWithValue(cfv1alpha1.SpaceGUIDLabel, space.Name))
	})

	It("writes a new space's status once while HNC makes its namespace, whichever steps HNC takes", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		events, err := watcher.Watch(ctx, &cfv1alpha1.CFSpaceList{}, client.InNamespace(org.Name))
		Expect(err).NotTo(HaveOccurred())
		defer events.Stop()
		space := newSpace(org.Name, "dev")
		Expect(k8s.Create(ctx, space)).To(Succeed())

		var waiting []metav1.Condition
		Eventually(func() bool {
			for {
				select {
				case event := <-events.ResultChan():
					seen, ok := event.Object.(*cfv1alpha1.CFSpace)
					Expect(ok).To(BeTrue(), "%v", event.Object)
					ready := meta.FindStatusCondition(seen.Status.Conditions, cfv1alpha1.ReadyCondition)
					switch {
					case ready == nil:
					case ready.Status == metav1.ConditionTrue:
						return true
					case len(waiting) == 0 || waiting[len(waiting)-1].Message != ready.Message:
						waiting = append(waiting, *ready)
					}
				default:
					return false
				}
			}
		}).Should(BeTrue())
		Expect(waiting).To(ConsistOf(HaveField("Reason", cfv1alpha1.AnchorPendingReason)))
	})

	It("follows a space's rename on its namespace", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		space := createSpace(ctx, org.Name, "dev")
		space.Spec.DisplayName = "development"
		Expect(k8s.Update(ctx, space)).To(Succeed())
		Eventually(func() map[string]string { return namespace(ctx, space.Name).Annotations }).
			Should(HaveKeyWithValue(cfv1alpha1.SpaceNameAnnotation, "development"))
	})

	Describe("names and placement", func() {
		It("rejects an org whose name is taken, ignoring case, and leaves the first alone", func(ctx SpecContext) {
			name := "Acme " + string(uuid.NewUUID())
			first := createOrg(ctx, name)
			err := k8s.Create(ctx, newOrg(strings.ToUpper(name)))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("Organization '%s' already exists.", strings.ToUpper(name)))
			Consistently(readiness(ctx, first), "2s").Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
		})

		It("rejects a space whose name is taken in its org, ignoring case, but not in another org", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			other := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			createSpace(ctx, org.Name, "dev")
			err := k8s.Create(ctx, newSpace(org.Name, "DEV"))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("Name must be unique per organization"))
			createSpace(ctx, other.Name, "dev")
		})

		It("rejects renaming a space to a taken name and keeps its old name", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			createSpace(ctx, org.Name, "dev")
			prod := createSpace(ctx, org.Name, "prod")
			prod.Spec.DisplayName = "Dev"
			Expect(k8s.Update(ctx, prod)).To(MatchError(ContainSubstring("Name must be unique per organization")))
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
			Expect(prod.Spec.DisplayName).To(Equal("prod"))
		})

		It("labels orgs and spaces with the key of their display name as they are created and renamed, and gives them their finalizer at creation", func(ctx SpecContext) {
			org := newOrg("Org " + string(uuid.NewUUID()))
			Expect(k8s.Create(ctx, org)).To(Succeed())
			Expect(org.Labels).To(HaveKeyWithValue(cfv1alpha1.DisplayNameKeyLabel, cfv1alpha1.DisplayNameKey(org.Spec.DisplayName)))
			Expect(org.Finalizers).To(ConsistOf(orgspace.Finalizer))
			// A space can be created only once HNC has made its org's namespace.
			Eventually(readiness(ctx, org)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
			space := newSpace(org.Name, "dev")
			Expect(k8s.Create(ctx, space)).To(Succeed())
			Expect(space.Labels).To(HaveKeyWithValue(cfv1alpha1.DisplayNameKeyLabel, cfv1alpha1.DisplayNameKey("dev")))
			Expect(space.Finalizers).To(ConsistOf(orgspace.Finalizer))
			patch := client.MergeFrom(space.DeepCopy())
			space.Spec.DisplayName = "Development"
			Expect(k8s.Patch(ctx, space, patch)).To(Succeed())
			Expect(space.Labels).To(HaveKeyWithValue(cfv1alpha1.DisplayNameKeyLabel, cfv1alpha1.DisplayNameKey("development")))
		})

		It("labels again a space that lost the key of its display name, and refuses its name to another", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			space := createSpace(ctx, org.Name, "dev")
			patch := client.MergeFrom(space.DeepCopy())
			delete(space.Labels, cfv1alpha1.DisplayNameKeyLabel)
			Expect(k8s.Patch(ctx, space, patch)).To(Succeed())
			Expect(space.Labels).NotTo(HaveKey(cfv1alpha1.DisplayNameKeyLabel))
			Eventually(func(g Gomega) map[string]string {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(space), space)).To(Succeed())
				return space.Labels
			}).Should(HaveKeyWithValue(cfv1alpha1.DisplayNameKeyLabel, cfv1alpha1.DisplayNameKey("dev")))
			Expect(k8s.Create(ctx, newSpace(org.Name, "DEV"))).To(MatchError(ContainSubstring("Name must be unique per organization")))
		})

		It("creates a space while its mutating webhook does not answer, as during an upgrade, and labels it and adds its finalizer after", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			withSpaceDefaulterUnserved(ctx, org.Name)
			space := newSpace(org.Name, "dev")
			// The manager's cache holds none of these: its write must not remove them.
			space.Labels = map[string]string{"team.example/owner": "a"}
			space.Annotations = map[string]string{"team.example/note": "b"}
			Expect(k8s.Create(ctx, space)).To(Succeed())
			Expect(space.Labels).NotTo(HaveKey(cfv1alpha1.DisplayNameKeyLabel))
			Expect(space.Finalizers).To(BeEmpty())
			Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(space), space)).To(Succeed())
				g.Expect(space.Labels).To(HaveKeyWithValue(cfv1alpha1.DisplayNameKeyLabel, cfv1alpha1.DisplayNameKey("dev")))
				g.Expect(space.Finalizers).To(ConsistOf(orgspace.Finalizer))
			}).Should(Succeed())
			Expect(space.Labels).To(HaveKeyWithValue("team.example/owner", "a"))
			Expect(space.Annotations).To(HaveKeyWithValue("team.example/note", "b"))
			Eventually(readiness(ctx, space)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
			Expect(k8s.Create(ctx, newSpace(org.Name, "DEV"))).To(MatchError(ContainSubstring("Name must be unique per organization")))
		})

		It("refuses orgs and spaces whose name is not a lowercase UUID in the apiserver itself, saying what a GUID looks like", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			guid := string(uuid.NewUUID())
			for _, name := range []string{"istio-system", "monitoring", "with.dots", strings.ToUpper(guid), guid[:35], guid + "0", "x" + guid[1:]} {
				Expect(cfv1alpha1.ValidateNamespaceGUID(name)).NotTo(BeEmpty(), name)
				squatter := newOrg("Squatter " + string(uuid.NewUUID()))
				squatter.Name = name
				space := newSpace(org.Name, "squatter")
				space.Name = name
				for _, obj := range []client.Object{squatter, space} {
					err := k8s.Create(ctx, obj, client.DryRunAll)
					Expect(err).To(MatchError(ContainSubstring(cfv1alpha1.ValidateNamespaceGUID(name))), "%T %s", obj, name)
					Expect(err.Error()).NotTo(ContainSubstring("admission webhook"), "the CRD refuses it, so the refusal holds while cf-hnc is down")
				}
			}
			Expect(cfv1alpha1.ValidateNamespaceGUID(guid)).To(BeEmpty())
			fine := newSpace(org.Name, "fine")
			fine.Name = guid
			Expect(k8s.Create(ctx, fine, client.DryRunAll)).To(Succeed())
		})

		It("rejects an org outside the root namespace", func(ctx SpecContext) {
			org := newOrg("Stray " + string(uuid.NewUUID()))
			org.Namespace = "default"
			Expect(k8s.Create(ctx, org)).To(MatchError(ContainSubstring(`orgs are created in the root namespace "cf"`)))
		})

		It("rejects a space outside an org namespace", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			space := createSpace(ctx, org.Name, "dev")
			for _, ns := range []string{root, "default", space.Name} {
				Expect(k8s.Create(ctx, newSpace(ns, "stray"))).To(MatchError(ContainSubstring("spaces are created in the namespace of their org")), ns)
			}
		})

		It("reports a namespace that already exists as a conflict and never deletes it", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			space := newSpace(org.Name, "dev")
			foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space.Name}}
			Expect(k8s.Create(ctx, foreign)).To(Succeed())
			Expect(k8s.Create(ctx, space)).To(Succeed())
			Eventually(readiness(ctx, space)).Should(HaveReason(cfv1alpha1.AnchorConflictReason))

			Expect(k8s.Delete(ctx, space)).To(Succeed())
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(space), space) }).Should(BeNotFound())
			Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign) }, "2s").Should(Succeed())
			Expect(foreign.DeletionTimestamp).To(BeNil())
		})
	})

	Describe("deletion", func() {
		It("deletes a space's namespace before the space goes", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			space := createSpace(ctx, org.Name, "dev")
			Expect(k8s.Delete(ctx, space)).To(Succeed())
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: space.Name}, &corev1.Namespace{}) }, time.Minute).Should(BeNotFound())
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(space), space) }).Should(BeNotFound())
		})

		It("deletes an org with all its spaces and their namespaces", func(ctx SpecContext) {
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			dev := createSpace(ctx, org.Name, "dev")
			prod := createSpace(ctx, org.Name, "prod")
			Expect(k8s.Delete(ctx, org)).To(Succeed())
			for _, name := range []string{dev.Name, prod.Name, org.Name} {
				Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}) }, 2*time.Minute).Should(BeNotFound(), name)
			}
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(org), org) }).Should(BeNotFound())
		})

		It("keeps a space of a deleted org until its namespace is gone, also once HNC took the namespace out of the tree", func(ctx SpecContext) {
			const hold = "test.cloudfoundry.org/hold"
			org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
			space := createSpace(ctx, org.Name, "dev")
			ns := namespace(ctx, space.Name)
			testenv.Update(ctx, k8s, ns, func() { controllerutil.AddFinalizer(ns, hold) })
			release := func(ctx context.Context) {
				testenv.Update(ctx, k8s, ns, func() { controllerutil.RemoveFinalizer(ns, hold) })
			}
			DeferCleanup(func(ctx SpecContext) {
				if k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns) == nil {
					release(ctx)
				}
			})
			Expect(k8s.Delete(ctx, org)).To(Succeed())
			// The manager caches only the namespaces of CF's tree: this one has left its cache.
			Eventually(func(g Gomega) {
				current := namespace(ctx, space.Name)
				g.Expect(current.DeletionTimestamp).NotTo(BeNil())
				g.Expect(current.Labels).NotTo(HaveKey(root + hncv1alpha2.LabelTreeDepthSuffix))
			}, 2*time.Minute, time.Second).Should(Succeed())
			// Longer than the reconciler's poll of a deletion (5 s).
			Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(space), space) }, 7*time.Second).Should(Succeed())
			release(ctx)
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(space), space) }, time.Minute).Should(BeNotFound())
		})
	})
})

func newOrg(name string) *cfv1alpha1.CFOrg {
	return &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: name},
	}
}

func newSpace(orgGUID, name string) *cfv1alpha1.CFSpace {
	return &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: orgGUID, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: name},
	}
}

// withSpaceDefaulterUnserved points the spaces' mutating webhook at a path that the manager does
// not serve, as the replicas of an older release do not serve a newer webhook during an
// upgrade, until the spec ends. It waits until the apiserver calls the webhook there, and at
// the end until it calls the served path again: a dry run of a space in org shows which.
func withSpaceDefaulterUnserved(ctx context.Context, org string) {
	GinkgoHelper()
	defaulted := func(ctx context.Context) func(Gomega) bool {
		return func(g Gomega) bool {
			probe := newSpace(org, "probe")
			g.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			_, labelled := probe.Labels[cfv1alpha1.DisplayNameKeyLabel]
			return labelled
		}
	}
	configs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	Expect(k8s.List(ctx, configs)).To(Succeed())
	for i := range configs.Items {
		config := &configs.Items[i]
		at := slices.IndexFunc(config.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
			return w.Name == "mcfspace.workloads.cloudfoundry.org"
		})
		if at < 0 {
			continue
		}
		served := *config.Webhooks[at].ClientConfig.URL
		unserved, err := url.Parse(served)
		Expect(err).NotTo(HaveOccurred())
		unserved.Path = "/not-served"
		setURL := func(ctx context.Context, to string) {
			testenv.Update(ctx, k8s, config, func() { config.Webhooks[at].ClientConfig.URL = &to })
		}
		setURL(ctx, unserved.String())
		DeferCleanup(func(ctx SpecContext) {
			setURL(ctx, served)
			Eventually(defaulted(ctx)).Should(BeTrue())
		})
		Eventually(defaulted(ctx)).Should(BeFalse())
		return
	}
	Fail("no mutating webhook mcfspace.workloads.cloudfoundry.org")
}

// createOrg creates an org and waits until it is Ready.
func createOrg(ctx SpecContext, name string) *cfv1alpha1.CFOrg {
	org := newOrg(name)
	Expect(k8s.Create(ctx, org)).To(Succeed())
	Eventually(readiness(ctx, org)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
	return org
}

// createSpace creates a space and waits until it is Ready.
func createSpace(ctx SpecContext, orgGUID, name string) *cfv1alpha1.CFSpace {
	space := newSpace(orgGUID, name)
	Expect(k8s.Create(ctx, space)).To(Succeed())
	Eventually(readiness(ctx, space)).Should(HaveReason(cfv1alpha1.NamespaceReadyReason))
	return space
}

func namespace(ctx SpecContext, name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
	return ns
}

// readiness returns the Ready condition of an org or space, refreshed.
func readiness(ctx SpecContext, obj client.Object) func() *metav1.Condition {
	return func() *metav1.Condition {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil
		}
		var conditions []metav1.Condition
		switch o := obj.(type) {
		case *cfv1alpha1.CFOrg:
			conditions = o.Status.Conditions
		case *cfv1alpha1.CFSpace:
			conditions = o.Status.Conditions
		}
		return meta.FindStatusCondition(conditions, cfv1alpha1.ReadyCondition)
	}
}

// HaveReason matches a condition with the reason, True for the ready reasons and False otherwise.
func HaveReason(reason string) OmegaMatcher {
	status := metav1.ConditionFalse
	if reason == cfv1alpha1.NamespaceReadyReason {
		status = metav1.ConditionTrue
	}
	return And(Not(BeNil()), HaveField("Reason", reason), HaveField("Status", status))
}

// BeNotFound matches a NotFound error.
func BeNotFound() OmegaMatcher {
	return WithTransform(apierrors.IsNotFound, BeTrue())
}
