package cli

import (
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var (
	ready     = metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.NamespaceReadyReason}
	pending   = metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.AnchorPendingReason}
	canBuild  = metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildConfigCompleteReason}
	noBuilder = metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuilderMissingReason}
	gone      = metav1.NewTime(time.Unix(100, 0))
)

func org(guid, name string, conditions ...metav1.Condition) cfv1alpha1.CFOrg {
	return cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: "cf", Name: guid},
		Spec: cfv1alpha1.CFOrgSpec{DisplayName: name}, Status: cfv1alpha1.CFOrgStatus{Conditions: conditions}}
}

func space(org, guid, name string, conditions ...metav1.Condition) cfv1alpha1.CFSpace {
	return cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: guid},
		Spec: cfv1alpha1.CFSpaceSpec{DisplayName: name}, Status: cfv1alpha1.CFSpaceStatus{Conditions: conditions}}
}

func deleting[T interface{ SetDeletionTimestamp(*metav1.Time) }](obj T) T {
	obj.SetDeletionTimestamp(&gone)
	return obj
}

var _ = Describe("laying out the tree", func() {
	It("sorts orgs and spaces by name ignoring case, draws the branches and marks what is being deleted", func() {
		leaving := org("o3", "leaving")
		orgs := []cfv1alpha1.CFOrg{org("o2", "beta", ready), org("o1", "Alpha", ready), *deleting(&leaving)}
		web := space("o1", "s3", "web", ready, canBuild)
		spaces := []cfv1alpha1.CFSpace{
			space("o2", "s2", "prod", ready, noBuilder),
			space("o2", "s1", "Dev", pending),
			*deleting(&web),
			space("cf", "s4", "outside every org", ready),
		}
		Expect(treeRows(orgs, spaces)).To(Equal([][]string{
			{"ORG / SPACE", "NAMESPACE", "READY", "BUILD READY"},
			{"Alpha", "o1", "True", ""},
			{"└── web (deleting)", "s3", "True", "True"},
			{"beta", "o2", "True", ""},
			{"├── Dev", "s1", "False (AnchorPending)", "Unknown"},
			{"└── prod", "s2", "True", "False (BuilderMissing)"},
			{"leaving (deleting)", "o3", "Unknown", ""},
		}))
	})
})

var _ = Describe("finding an org or a space", func() {
	older, newer := org("o1", "acme"), org("o2", "ACME")
	older.CreationTimestamp, newer.CreationTimestamp = metav1.NewTime(time.Unix(1, 0)), metav1.NewTime(time.Unix(2, 0))
	leaving := org("o0", "acme")

	DescribeTable("by GUID, else by display name ignoring case, the oldest live one winning",
		func(key string, want string) {
			found := cf.Lookup([]cfv1alpha1.CFOrg{newer, *deleting(&leaving), older}, key)
			if want == "" {
				Expect(found).To(BeNil())
				return
			}
			Expect(found.Name).To(Equal(want))
		},
		Entry("a GUID", "o2", "o2"),
		Entry("a GUID of an org being deleted", "o0", "o0"),
		Entry("a display name in another case", "Acme", "o1"),
		Entry("an unknown name", "other", ""),
	)
})

var _ = Describe("waiting for a space to pick up set-registry", func() {
	dev := space("org", "dev", "dev")
	placements := map[string]placement{
		cfv1alpha1.RootLevel:  {level: cfv1alpha1.RootLevel, namespace: "cf"},
		cfv1alpha1.OrgLevel:   {level: cfv1alpha1.OrgLevel, namespace: "org", org: "org"},
		cfv1alpha1.SpaceLevel: {level: cfv1alpha1.SpaceLevel, namespace: "dev", org: "org"},
	}

	DescribeTable("counts an object the space uses as covering the placed one when it is that one or placed nearer the space",
		func(level string, used cfv1alpha1.PlacedObject, covers bool) {
			p := placements[level]
			Expect(p.covers(&dev, used, p.secretName())).To(Equal(covers))
		},
		Entry("the org's, for the org", cfv1alpha1.OrgLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: "org"}, true),
		Entry("another of the org's, for the org", cfv1alpha1.OrgLevel, cfv1alpha1.PlacedObject{Name: "other", From: "org"}, false),
		Entry("the root's, for the org", cfv1alpha1.OrgLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-root", From: "cf"}, false),
		Entry("the space's, for the org", cfv1alpha1.OrgLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-space", From: "dev"}, true),
		Entry("the org's, for the root", cfv1alpha1.RootLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: "org"}, true),
		Entry("the root's, for the root", cfv1alpha1.RootLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-root", From: "cf"}, true),
		Entry("the org's, for the space", cfv1alpha1.SpaceLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: "org"}, false),
		Entry("the space's, for the space", cfv1alpha1.SpaceLevel, cfv1alpha1.PlacedObject{Name: "cf-registry-space", From: "dev"}, true),
	)

	DescribeTable("is done once the space's credentials and ServiceAccount are covered and listed together",
		func(change func(*cfv1alpha1.CFSpace), settled bool) {
			s := space("org", "dev", "dev", ready, noBuilder)
			s.Status.Build = &cfv1alpha1.SpaceBuildConfig{
				RegistryCredentials: []cfv1alpha1.RegistryCredential{
					{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: "org"}}},
				ServiceAccount: &cfv1alpha1.PlacedObject{Name: "cf-build-org", From: "org"},
			}
			change(&s)
			Expect(placements[cfv1alpha1.OrgLevel].settled(&s, "registry.local")).To(Equal(settled))
		},
		Entry("both placed ones", func(*cfv1alpha1.CFSpace) {}, true),
		Entry("no build configuration yet", func(s *cfv1alpha1.CFSpace) { s.Status.Build = nil }, false),
		Entry("credentials for another registry only", func(s *cfv1alpha1.CFSpace) {
			s.Status.Build.RegistryCredentials[0].Registry = "other.local"
		}, false),
		Entry("the root's ServiceAccount still", func(s *cfv1alpha1.CFSpace) {
			s.Status.Build.ServiceAccount = &cfv1alpha1.PlacedObject{Name: "cf-build-root", From: "cf"}
		}, false),
		Entry("credentials not yet on the ServiceAccount", func(s *cfv1alpha1.CFSpace) {
			s.Status.Conditions[1].Reason = cfv1alpha1.CredentialsNotOnServiceAccountReason
		}, false),
		Entry("no namespace, so nothing to pick up", func(s *cfv1alpha1.CFSpace) {
			s.Status.Conditions[0] = pending
			s.Status.Build = nil
		}, true),
	)
})
