package cfapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// unique makes a display name unique in the suite.
func unique(name string) string { return name + "-" + string(uuid.NewUUID())[:8] }

// listed returns, once the API's cache has caught up with the test's writes, the names that
// a list answers to u.
func listed(ctx context.Context, u user, target string) func() []string {
	return func() []string { return names(decode[list](u.get(ctx, target), http.StatusOK)) }
}

// orgQuery is the query of `cf orgs`; spacesOf that of `cf spaces` in an org.
const orgQuery = "/v3/organizations?order_by=name"

func spacesOf(org string) string { return "/v3/spaces?organization_guids=" + org + "&order_by=name" }

// byName is the query by which `cf target`, `cf delete-space` and `cf create-space -o` find
// one org or space by name (cli:actor/v7action/organization.go, space.go).
func byName(path, name string, extra ...string) string {
	values := url.Values{"names": {strings.ReplaceAll(name, ",", "%2C")}, "per_page": {"1"}, "page": {"1"}}
	for i := 0; i+1 < len(extra); i += 2 {
		values.Set(extra[i], extra[i+1])
	}
	return path + "?" + values.Encode()
}

// guidByName finds one org or space by name as the cf CLI does, once u sees it.
func guidByName(ctx context.Context, u user, path, name string, extra ...string) string {
	GinkgoHelper()
	var found list
	Eventually(func(g Gomega) {
		found = decode[list](u.get(ctx, byName(path, name, extra...)), http.StatusOK)
		g.Expect(found.Resources).To(HaveLen(1))
	}).Should(Succeed())
	return found.Resources[0].GUID
}

// managedOrg creates an org and a user that manages it, and waits until the API sees that.
func managedOrg(ctx context.Context, userName string) (org string, manager user) {
	GinkgoHelper()
	org = testenv.CreateOrg(ctx, k8s, unique("org"))
	manager = newUser(ctx, userName)
	bind(ctx, org, "cf-org-manager", manager.Subject())
	Eventually(func() int { return manager.get(ctx, "/v3/organizations/"+org).status }).Should(Equal(http.StatusOK))
	return org, manager
}

// developedSpace creates a space in an org of its own and a user that develops in it (and
// nothing else), and waits until the API sees that.
func developedSpace(ctx context.Context, orgManagerName, spaceName string) (org, space string, developer user) {
	GinkgoHelper()
	org, _ = managedOrg(ctx, orgManagerName)
	space = testenv.CreateSpace(ctx, k8s, org, spaceName)
	developer = newUser(ctx, "developer")
	bind(ctx, space, "cf-space-developer", developer.Subject())
	Eventually(func() int { return developer.get(ctx, "/v3/spaces/"+space).status }).Should(Equal(http.StatusOK))
	return org, space, developer
}

var _ = Describe("cf orgs and cf spaces", Ordered, func() {
	var (
		orgA, orgB                string
		spaceA1, spaceA2, spaceB1 string
		nameA, nameB              string
		orgManager, groupMember   user
		spaceDeveloper, opsUser   user
		spaceDeveloperBinding     *rbacv1.RoleBinding
	)

	BeforeAll(func(ctx SpecContext) {
		nameA, nameB = unique("org-a"), unique("org-b")
		orgA, orgB = testenv.CreateOrg(ctx, k8s, nameA), testenv.CreateOrg(ctx, k8s, nameB)
		spaceA1 = testenv.CreateSpace(ctx, k8s, orgA, "space-1")
		spaceA2 = testenv.CreateSpace(ctx, k8s, orgA, "space-2")
		spaceB1 = testenv.CreateSpace(ctx, k8s, orgB, "space-b")

		orgManager = newUser(ctx, "org-manager")
		bind(ctx, orgA, "cf-org-manager", orgManager.Subject())
		groupMember = newUser(ctx, "group-member")
		bind(ctx, orgB, "cf-org-user", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: groupMember.Group()})
		spaceDeveloper = newUser(ctx, "space-developer")
		spaceDeveloperBinding = bind(ctx, spaceA1, "cf-space-developer", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: spaceDeveloper.Namespace, Name: "space-developer"})
		opsUser = operator(ctx)
	})

	It("lists to an org manager only the org it manages, with its spaces, and hides the others as not found", func(ctx SpecContext) {
		Eventually(listed(ctx, orgManager, orgQuery)).Should(Equal([]string{nameA}))
		Expect(listed(ctx, orgManager, spacesOf(orgA))()).To(Equal([]string{"space-1", "space-2"}))
		Expect(listed(ctx, orgManager, "/v3/spaces?order_by=name")()).To(Equal([]string{"space-1", "space-2"}))
		Expect(listed(ctx, orgManager, spacesOf(orgB))()).To(BeEmpty())
		Expect(cfErrorOf(orgManager.get(ctx, "/v3/organizations/"+orgB), http.StatusNotFound)).
			To(Equal(cfError{Code: 10010, Title: "CF-ResourceNotFound", Detail: "Organization not found"}))
		Expect(cfErrorOf(orgManager.get(ctx, "/v3/spaces/"+spaceB1), http.StatusNotFound)).
			To(Equal(cfError{Code: 10010, Title: "CF-ResourceNotFound", Detail: "Space not found"}))
	})

	It("lists to a member of a group the org that the group is bound in (Korifi ignores groups)", func(ctx SpecContext) {
		Eventually(listed(ctx, groupMember, orgQuery)).Should(Equal([]string{nameB}))
		Expect(listed(ctx, groupMember, "/v3/spaces")()).To(Equal([]string{"space-b"}))
	})

	It("lists to a space developer its space and the space's org, not the org's other spaces", func(ctx SpecContext) {
		Eventually(listed(ctx, spaceDeveloper, orgQuery)).Should(Equal([]string{nameA}))
		Expect(listed(ctx, spaceDeveloper, spacesOf(orgA))()).To(Equal([]string{"space-1"}))
		Expect(spaceDeveloper.get(ctx, "/v3/spaces/"+spaceA2).status).To(Equal(http.StatusNotFound))
	})

	It("lists every org to an operator, who may list the orgs of the root namespace", func(ctx SpecContext) {
		Expect(listed(ctx, opsUser, orgQuery)()).To(ContainElements(nameA, nameB))
		Expect(listed(ctx, opsUser, "/v3/spaces?organization_guids="+orgA+","+orgB+"&order_by=name")()).
			To(Equal([]string{"space-1", "space-2", "space-b"}))
	})

	It("presents orgs and spaces in CF's shapes, with absolute links and without cf-hnc's own labels", func(ctx SpecContext) {
		org := decode[resource](orgManager.get(ctx, "/v3/organizations/"+orgA), http.StatusOK)
		Expect(org.GUID).To(Equal(orgA))
		Expect(org.Name).To(Equal(nameA))
		Expect(org.Suspended).To(HaveValue(BeFalse()))
		Expect(org.CreatedAt).To(BeTemporally("~", time.Now(), time.Minute))
		Expect(org.UpdatedAt).To(BeTemporally(">=", org.CreatedAt))
		Expect(org.Relationships).To(HaveKeyWithValue("quota", relationship{}))
		Expect(org.Links).To(HaveKeyWithValue("self", link{Href: api + "/v3/organizations/" + orgA}))
		Expect(org.Metadata.Labels).To(And(Not(BeNil()), Not(HaveKey(cfv1alpha1.DisplayNameKeyLabel))))

		space := decode[resource](orgManager.get(ctx, "/v3/spaces/"+spaceA1), http.StatusOK)
		Expect(space.Name).To(Equal("space-1"))
		Expect(space.Relationships["organization"].Data).To(HaveField("GUID", orgA))
		Expect(space.Links).To(HaveKeyWithValue("organization", link{Href: api + "/v3/organizations/" + orgA}))
		Expect(space.Links).To(HaveKeyWithValue("self", link{Href: api + "/v3/spaces/" + spaceA1}))
	})

	It("stops listing an org to a user whose RoleBinding is removed", func(ctx SpecContext) {
		Expect(k8s.Delete(ctx, spaceDeveloperBinding)).To(Succeed())
		Eventually(listed(ctx, spaceDeveloper, orgQuery)).Should(BeEmpty())
	})
})

var _ = Describe("List pages and filters", func() {
	var (
		org    string
		member user
	)

	BeforeEach(func(ctx SpecContext) {
		org = testenv.CreateOrg(ctx, k8s, unique("paged"))
		for _, name := range []string{"s1", "s2", "a,b"} {
			testenv.CreateSpace(ctx, k8s, org, name)
		}
		member = newUser(ctx, "paged-member")
		bind(ctx, org, "cf-org-user", member.Subject())
		Eventually(listed(ctx, member, spacesOf(org))).Should(HaveLen(3))
	})

	It("pages a list with absolute links that the cf CLI follows, in the order asked for", func(ctx SpecContext) {
		first := decode[list](member.get(ctx, spacesOf(org)+"&per_page=2"), http.StatusOK)
		Expect(first.Pagination.TotalResults).To(Equal(3))
		Expect(first.Pagination.TotalPages).To(Equal(2))
		Expect(names(first)).To(Equal([]string{"a,b", "s1"}))
		Expect(first.Pagination.Previous).To(BeNil())
		Expect(first.Pagination.Next).NotTo(BeNil())
		Expect(first.Pagination.Next.Href).To(HavePrefix(api + "/v3/spaces?"))
		Expect(first.Pagination.Last.Href).To(ContainSubstring("page=2"))

		second := decode[list](member.get(ctx, first.Pagination.Next.Href), http.StatusOK)
		Expect(names(second)).To(Equal([]string{"s2"}))
		Expect(second.Pagination.Next).To(BeNil(), "the cf CLI stops at a null next")
		Expect(second.Pagination.Previous).NotTo(BeNil())
		Expect(names(decode[list](member.get(ctx, second.Pagination.Previous.Href), http.StatusOK))).To(Equal(names(first)))

		Expect(listed(ctx, member, "/v3/spaces?organization_guids="+org+"&order_by=-name")()).To(Equal([]string{"s2", "s1", "a,b"}))
	})

	It("filters by names, ignoring case as CF does, with a comma in a name escaped as the cf CLI escapes it", func(ctx SpecContext) {
		Expect(listed(ctx, member, byName("/v3/spaces", "S1", "organization_guids", org))()).To(Equal([]string{"s1"}))
		Expect(listed(ctx, member, byName("/v3/spaces", "a,b", "organization_guids", org))()).To(Equal([]string{"a,b"}))
		Expect(listed(ctx, member, spacesOf(org)+"&names=s1,s2")()).To(Equal([]string{"s1", "s2"}))
	})

	It("filters by label_selector on the user's labels", func(ctx SpecContext) {
		spaces := &cfv1alpha1.CFSpaceList{}
		Expect(k8s.List(ctx, spaces, client.InNamespace(org))).To(Succeed())
		s2 := &spaces.Items[indexOf(spaces.Items, "s2")]
		testenv.Update(ctx, k8s, s2, func() { metav1.SetMetaDataLabel(&s2.ObjectMeta, "env", "prod") })
		Eventually(listed(ctx, member, spacesOf(org)+"&label_selector=env%3Dprod")).Should(Equal([]string{"s2"}))
		Expect(listed(ctx, member, spacesOf(org)+"&label_selector=!env")()).To(Equal([]string{"a,b", "s1"}))
	})

	It("refuses page sizes, pages, orders and selectors it does not know", func(ctx SpecContext) {
		for _, query := range []string{"per_page=0", "per_page=5001", "page=0", "page=x", "order_by=size", "label_selector=a+in+%28"} {
			Expect(cfErrorOf(member.get(ctx, "/v3/spaces?"+query), http.StatusBadRequest)).
				To(And(HaveField("Code", 10005), HaveField("Title", "CF-BadQueryParameter")), query)
		}
	})
})

func indexOf(spaces []cfv1alpha1.CFSpace, displayName string) int {
	for i := range spaces {
		if spaces[i].Spec.DisplayName == displayName {
			return i
		}
	}
	Fail("no space " + displayName)
	return -1
}

var _ = Describe("cf create-org", func() {
	It("creates a CFOrg named by a new GUID in the root namespace, and answers once its namespace exists", func(ctx SpecContext) {
		op := operator(ctx)
		name := unique("created")
		Expect(op.get(ctx, "/whoami").status).To(Equal(http.StatusOK))
		created := decode[resource](op.post(ctx, "/v3/organizations", map[string]any{"name": name, "suspended": false}), http.StatusCreated)
		Expect(created.Name).To(Equal(name))
		Expect(cfv1alpha1.ValidateGUID(created.GUID)).To(BeEmpty())

		org := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: created.GUID}, org)).To(Succeed())
		Expect(org.Spec.DisplayName).To(Equal(name))
		Expect(meta.IsStatusConditionTrue(org.Status.Conditions, cfv1alpha1.ReadyCondition)).To(BeTrue())
		Expect(k8s.Get(ctx, client.ObjectKey{Name: created.GUID}, &corev1.Namespace{})).To(Succeed())

		Expect(guidByName(ctx, op, "/v3/organizations", name)).To(Equal(created.GUID))
	})

	It("answers CF's sentence for a taken name, which the cf CLI prints before OK", func(ctx SpecContext) {
		op := operator(ctx)
		name := unique("taken")
		Expect(op.post(ctx, "/v3/organizations", map[string]any{"name": name, "suspended": false}).status).To(Equal(http.StatusCreated))
		again := strings.ToUpper(name)
		taken := cfErrorOf(op.post(ctx, "/v3/organizations", map[string]any{"name": again, "suspended": false}), http.StatusUnprocessableEntity)
		Expect(taken).To(Equal(cfError{Code: 10008, Title: "CF-UnprocessableEntity", Detail: fmt.Sprintf("Organization '%s' already exists.", again)}))
		Expect(regexp.MustCompile(`Organization '.*' already exists\.`).MatchString(taken.Detail)).To(BeTrue(),
			"cli:api/cloudcontroller/ccv3/errors.go matches it")
	})

	It("refuses an org to a user who may not create one, as RBAC does", func(ctx SpecContext) {
		developer := newUser(ctx, "no-org-rights")
		name := unique("refused")
		refused := cfErrorOf(developer.post(ctx, "/v3/organizations", map[string]any{"name": name, "suspended": false}), http.StatusForbidden)
		Expect(refused).To(And(HaveField("Code", 10003), HaveField("Title", "CF-NotAuthorized")))
		orgs := &cfv1alpha1.CFOrgList{}
		Expect(k8s.List(ctx, orgs, client.InNamespace(root))).To(Succeed())
		Expect(orgs.Items).NotTo(ContainElement(HaveField("Spec.DisplayName", name)))
	})

	It("refuses a request without a name, and a body it cannot read", func(ctx SpecContext) {
		op := operator(ctx)
		Expect(cfErrorOf(op.post(ctx, "/v3/organizations", map[string]any{"suspended": false}), http.StatusUnprocessableEntity)).
			To(Equal(cfError{Code: 10008, Title: "CF-UnprocessableEntity", Detail: "Name can't be blank"}))
		Expect(cfErrorOf(op.post(ctx, "/v3/organizations", "not an org"), http.StatusBadRequest)).
			To(HaveField("Title", "CF-MessageParseError"))
	})
})

var _ = Describe("cf create-space", func() {
	It("creates a CFSpace in the org's namespace as an org manager, and answers once its namespace exists", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "space-creator")
		orgName := decode[resource](manager.get(ctx, "/v3/organizations/"+org), http.StatusOK).Name
		Expect(guidByName(ctx, manager, "/v3/organizations", orgName)).To(Equal(org))
		Expect(manager.get(ctx, "/whoami").status).To(Equal(http.StatusOK))
		created := decode[resource](manager.post(ctx, "/v3/spaces", spaceBody("dev", org)), http.StatusCreated)
		Expect(created.Name).To(Equal("dev"))
		Expect(created.Relationships["organization"].Data).To(HaveField("GUID", org))

		space := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: created.GUID}, space)).To(Succeed())
		Expect(space.Spec.DisplayName).To(Equal("dev"))
		Expect(meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.ReadyCondition)).To(BeTrue())
		Expect(k8s.Get(ctx, client.ObjectKey{Name: created.GUID}, &corev1.Namespace{})).To(Succeed(),
			"the cf CLI's next requests (the creator's space roles) go into it")

		Eventually(listed(ctx, manager, spacesOf(org))).Should(Equal([]string{"dev"}))
	})

	It("answers 'Name must be unique per organization' for a taken name, which the cf CLI reports as existing", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "space-creator")
		Expect(manager.post(ctx, "/v3/spaces", spaceBody("dev", org)).status).To(Equal(http.StatusCreated))
		Expect(cfErrorOf(manager.post(ctx, "/v3/spaces", spaceBody("DEV", org)), http.StatusUnprocessableEntity)).
			To(Equal(cfError{Code: 10008, Title: "CF-UnprocessableEntity", Detail: "Name must be unique per organization"}))
	})

	It("refuses a space in an org the user does not see as an invalid org, and to a space developer as RBAC does", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "space-creator")
		other := testenv.CreateOrg(ctx, k8s, unique("other"))
		Expect(cfErrorOf(manager.post(ctx, "/v3/spaces", spaceBody("dev", other)), http.StatusUnprocessableEntity)).
			To(HaveField("Detail", "Invalid organization. Ensure the organization exists and you have access to it."))

		space := testenv.CreateSpace(ctx, k8s, org, "existing")
		developer := newUser(ctx, "developer")
		bind(ctx, space, "cf-space-developer", developer.Subject())
		Eventually(listed(ctx, developer, orgQuery)).ShouldNot(BeEmpty())
		Expect(cfErrorOf(developer.post(ctx, "/v3/spaces", spaceBody("mine", org)), http.StatusForbidden)).
			To(HaveField("Title", "CF-NotAuthorized"))
	})
})

func spaceBody(name, org string) map[string]any {
	return map[string]any{"name": name, "relationships": map[string]any{"organization": map[string]any{"data": map[string]any{"guid": org}}}}
}

// awaitJob polls a job as the cf CLI does until it is no longer processing, and returns it.
func awaitJob(ctx context.Context, u user, location string) job {
	GinkgoHelper()
	var j job
	Eventually(func(g Gomega) string {
		j = decode[job](u.get(ctx, location), http.StatusOK)
		g.Expect(j.State).To(BeElementOf("PROCESSING", "COMPLETE"), "errors: %v", j.Errors)
		return j.State
	}, 2*time.Minute, time.Second).Should(Equal("COMPLETE"))
	return j
}

var _ = Describe("cf delete-space", func() {
	It("deletes a space as the cf CLI does, and its job completes once the space and its namespace are gone", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "space-deleter")
		testenv.CreateSpace(ctx, k8s, org, "doomed")
		orgName := decode[resource](manager.get(ctx, "/v3/organizations/"+org), http.StatusOK).Name

		Expect(manager.get(ctx, "/whoami").status).To(Equal(http.StatusOK))
		Expect(guidByName(ctx, manager, "/v3/organizations", orgName)).To(Equal(org))
		space := guidByName(ctx, manager, "/v3/spaces", "doomed", "organization_guids", org)
		deleted := manager.delete(ctx, "/v3/spaces/"+space)
		Expect(deleted.status).To(Equal(http.StatusAccepted))
		location := deleted.header.Get("Location")
		Expect(location).To(Equal(api + "/v3/jobs/space.delete~" + space))

		Expect(awaitJob(ctx, manager, location).Operation).To(Equal("space.delete"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, &cfv1alpha1.CFSpace{})).To(Satisfy(apierrors.IsNotFound))
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, &corev1.Namespace{})).To(Satisfy(apierrors.IsNotFound))
		Expect(listed(ctx, manager, spacesOf(org))()).To(BeEmpty())
	})

	It("refuses to delete a space to its space developer, as RBAC does", func(ctx SpecContext) {
		org, space, developer := developedSpace(ctx, "space-deleter", "kept")
		Expect(cfErrorOf(developer.delete(ctx, "/v3/spaces/"+space), http.StatusForbidden)).To(HaveField("Title", "CF-NotAuthorized"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, &cfv1alpha1.CFSpace{})).To(Succeed())
	})
})

var _ = Describe("cf delete-org", func() {
	It("deletes an org with its spaces, and its job completes once they are gone", func(ctx SpecContext) {
		op := operator(ctx)
		name := unique("doomed")
		org := testenv.CreateOrg(ctx, k8s, name)
		space := testenv.CreateSpace(ctx, k8s, org, "inside")

		Expect(guidByName(ctx, op, "/v3/organizations", name)).To(Equal(org))
		deleted := op.delete(ctx, "/v3/organizations/"+org)
		Expect(deleted.status).To(Equal(http.StatusAccepted))
		location := deleted.header.Get("Location")
		Expect(location).To(Equal(api + "/v3/jobs/org.delete~" + org))

		awaitJob(ctx, op, location)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: org}, &cfv1alpha1.CFOrg{})).To(Satisfy(apierrors.IsNotFound))
		for _, namespace := range []string{org, space} {
			Expect(k8s.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})).To(Satisfy(apierrors.IsNotFound))
		}
		Expect(listed(ctx, op, orgQuery)()).NotTo(ContainElement(name))
	})

	It("fails the job of an org that is not being deleted, and knows no other jobs", func(ctx SpecContext) {
		op := operator(ctx)
		org := testenv.CreateOrg(ctx, k8s, unique("kept"))
		j := decode[job](op.get(ctx, "/v3/jobs/org.delete~"+org), http.StatusOK)
		Expect(j.State).To(Equal("FAILED"))
		Expect(j.Errors).To(ConsistOf(HaveField("Detail", "Organization "+org+" is not being deleted")))
		Expect(cfErrorOf(op.get(ctx, "/v3/jobs/route.delete~"+org), http.StatusNotFound)).To(HaveField("Detail", "Job not found"))
	})
})
