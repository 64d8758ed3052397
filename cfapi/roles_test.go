package cfapi_test

import (
	"context"
	"net/http"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// roleBody is the body of POST /v3/roles as the cf CLI writes it for a user named by username
// (cli:resources/role_resource.go): an org role names the org, a space role the space.
func roleBody(roleType, relation, guid, username string) map[string]any {
	return map[string]any{
		"type": roleType,
		"relationships": map[string]any{
			relation: map[string]any{"data": map[string]any{"guid": guid}},
			"user":   map[string]any{"data": map[string]any{"username": username}},
		},
	}
}

type (
	role struct {
		GUID          string                  `json:"guid"`
		Type          string                  `json:"type"`
		CreatedAt     time.Time               `json:"created_at"`
		Relationships map[string]relationship `json:"relationships"`
		Links         map[string]link         `json:"links"`
	}
	cfUser struct {
		GUID             string `json:"guid"`
		Username         string `json:"username"`
		PresentationName string `json:"presentation_name"`
		Origin           string `json:"origin"`
	}
	roleList struct {
		Pagination struct {
			TotalResults int `json:"total_results"`
		} `json:"pagination"`
		Resources []role `json:"resources"`
		Included  struct {
			Users []cfUser `json:"users"`
		} `json:"included"`
	}
)

// grant is a role as `cf space-users` and `cf org-users` print it: type and user.
type grant struct{ Type, User string }

// grants are the roles of a list.
func grants(l roleList) []grant {
	var g []grant
	for _, r := range l.Resources {
		g = append(g, grant{Type: r.Type, User: r.Relationships["user"].Data.GUID})
	}
	return g
}

// alreadyHasRole is the pattern by which the cf CLI recognises a role granted twice
// (cli:api/cloudcontroller/ccv3/errors.go) and goes on.
var alreadyHasRole = regexp.MustCompile(`User '.*' already has '.*' role`)

// bindingsOf are the RoleBindings of a CF role in a namespace, as an admin sees them.
func bindingsOf(ctx context.Context, namespace, clusterRole string) []rbacv1.RoleBinding {
	GinkgoHelper()
	bindings := &rbacv1.RoleBindingList{}
	Expect(k8s.List(ctx, bindings, client.InNamespace(namespace))).To(Succeed())
	var of []rbacv1.RoleBinding
	for _, b := range bindings.Items {
		if b.RoleRef.Name == clusterRole && b.Labels["hnc.x-k8s.io/inherited-from"] == "" {
			of = append(of, b)
		}
	}
	return of
}

func serviceAccountSubject(u user) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: u.Namespace, Name: u.Name[len("system:serviceaccount:"+u.Namespace+":"):]}
}

var _ = Describe("cf create-space with the creator's roles", func() {
	It("creates the space, then grants its creator, an org manager, the roles that cf create-space asks for", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "space-creator")
		me := decode[struct{ Name, Kind string }](manager.get(ctx, "/whoami"), http.StatusOK)
		Expect(me).To(Equal(struct{ Name, Kind string }{manager.Name, "ServiceAccount"}))
		space := decode[resource](manager.post(ctx, "/v3/spaces", spaceBody("dev", org)), http.StatusCreated).GUID

		// cli:actor/v7action/role.go CreateSpaceRole, twice: org user (a 422 for a role the user
		// has is tolerated), then the space role (which must succeed).
		orgUser := decode[role](manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, me.Name)), http.StatusCreated)
		Expect(orgUser.Type).To(Equal("organization_user"))
		Expect(orgUser.Relationships["organization"].Data).To(HaveField("GUID", org))
		Expect(orgUser.Relationships["space"].Data).To(BeNil())
		Expect(orgUser.Relationships["user"].Data).To(HaveField("GUID", me.Name))
		Expect(orgUser.CreatedAt).To(BeTemporally("~", time.Now(), time.Minute))

		spaceManager := decode[role](manager.post(ctx, "/v3/roles", roleBody("space_manager", "space", space, me.Name)), http.StatusCreated)
		Expect(spaceManager.Relationships["space"].Data).To(HaveField("GUID", space))
		Expect(spaceManager.Links).To(HaveKeyWithValue("self", link{Href: api + "/v3/roles/" + spaceManager.GUID}))

		again := cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, me.Name)), http.StatusUnprocessableEntity)
		Expect(again).To(Equal(cfError{Code: 10008, Title: "CF-UnprocessableEntity", Detail: "User '" + me.Name + "' already has 'organization_user' role"}))
		Expect(alreadyHasRole.MatchString(again.Detail)).To(BeTrue())

		Expect(manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", space, me.Name)).status).To(Equal(http.StatusCreated))

		subject := serviceAccountSubject(manager)
		Expect(bindingsOf(ctx, org, "cf-org-user")).To(ConsistOf(HaveField("Subjects", ConsistOf(subject))))
		Expect(bindingsOf(ctx, space, "cf-space-manager")).To(ConsistOf(HaveField("Subjects", ConsistOf(subject))))
		Expect(bindingsOf(ctx, space, "cf-space-developer")).To(ConsistOf(HaveField("Subjects", ConsistOf(subject))))
	})
})

var _ = Describe("cf set-space-role and cf set-org-role", func() {
	It("lets an org manager grant a space role and an org role to another user, who then sees the space", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "role-granter")
		space := testenv.CreateSpace(ctx, k8s, org, "shared")
		teammate := newUser(ctx, "teammate")
		Expect(guidByName(ctx, manager, "/v3/spaces", "shared", "organization_guids", org)).To(Equal(space))

		Expect(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, teammate.Name)).status).To(Equal(http.StatusCreated))
		Expect(manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", space, teammate.Name)).status).To(Equal(http.StatusCreated))
		Expect(cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", space, teammate.Name)), http.StatusUnprocessableEntity).Detail).
			To(MatchRegexp(alreadyHasRole.String()), "cf set-space-role prints it as a warning and OK")
		Eventually(listed(ctx, teammate, spacesOf(org))).Should(Equal([]string{"shared"}))

		// A plain user name is a Kubernetes User.
		Expect(manager.post(ctx, "/v3/roles", roleBody("organization_manager", "organization", org, "alice@example.com")).status).To(Equal(http.StatusCreated))
		Expect(bindingsOf(ctx, org, "cf-org-manager")).To(ContainElement(HaveField("Subjects",
			ConsistOf(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice@example.com"}))))
	})

	It("refuses a role grant to a space developer, as RBAC does, and creates no RoleBinding", func(ctx SpecContext) {
		org, space, developer := developedSpace(ctx, "role-granter", "guarded")

		Expect(cfErrorOf(developer.post(ctx, "/v3/roles", roleBody("space_manager", "space", space, developer.Name)), http.StatusForbidden)).
			To(And(HaveField("Code", 10003), HaveField("Title", "CF-NotAuthorized")))
		Expect(cfErrorOf(developer.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, "mallory")), http.StatusForbidden)).
			To(HaveField("Title", "CF-NotAuthorized"))
		Expect(bindingsOf(ctx, space, "cf-space-manager")).To(BeEmpty())
		Expect(bindingsOf(ctx, org, "cf-org-user")).To(BeEmpty())
	})

	It("refuses a role that cf-hnc does not have, a space the user does not see, and a role without a user", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "role-granter")
		otherOrg := testenv.CreateOrg(ctx, k8s, unique("other"))
		hidden := testenv.CreateSpace(ctx, k8s, otherOrg, "hidden")

		Expect(cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("organization_auditor", "organization", org, "bob")), http.StatusUnprocessableEntity).Detail).
			To(ContainSubstring(`"organization_auditor" is not a role cf-hnc has`))
		Expect(cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", hidden, "bob")), http.StatusUnprocessableEntity).Detail).
			To(Equal("Invalid space. Ensure that the space exists and you have access to it."))
		Expect(cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", otherOrg, "bob")), http.StatusUnprocessableEntity).Detail).
			To(Equal("Invalid organization. Ensure the organization exists and you have access to it."))
		Expect(cfErrorOf(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, "")), http.StatusUnprocessableEntity).Detail).
			To(ContainSubstring("must name the user"))
		Expect(bindingsOf(ctx, hidden, "cf-space-developer")).To(BeEmpty())
	})
})

var _ = Describe("cf space-users and cf org-users", func() {
	It("lists the roles of a space and of an org with their users, without the org roles that HNC copies into the space", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "role-lister")
		space := testenv.CreateSpace(ctx, k8s, org, "listed")
		developer, auditor := newUser(ctx, "developer"), newUser(ctx, "auditor")
		Expect(guidByName(ctx, manager, "/v3/spaces", "listed", "organization_guids", org)).To(Equal(space))
		Expect(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, developer.Name)).status).To(Equal(http.StatusCreated))
		Expect(manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", space, developer.Name)).status).To(Equal(http.StatusCreated))
		Expect(manager.post(ctx, "/v3/roles", roleBody("space_auditor", "space", space, auditor.Name)).status).To(Equal(http.StatusCreated))

		// cli:actor/v7action/role.go getUsersByRoleType
		spaceRoles := decode[roleList](manager.get(ctx, "/v3/roles?space_guids="+space+"&include=user"), http.StatusOK)
		Expect(grants(spaceRoles)).To(ConsistOf(grant{"space_developer", developer.Name}, grant{"space_auditor", auditor.Name}))
		Expect(spaceRoles.Included.Users).To(ConsistOf(
			cfUser{GUID: developer.Name, Username: developer.Name, PresentationName: developer.Name, Origin: "kubernetes"},
			cfUser{GUID: auditor.Name, Username: auditor.Name, PresentationName: auditor.Name, Origin: "kubernetes"}))

		orgRoles := decode[roleList](manager.get(ctx, "/v3/roles?organization_guids="+org+"&include=user"), http.StatusOK)
		Expect(grants(orgRoles)).To(ConsistOf(grant{"organization_manager", manager.Name}, grant{"organization_user", developer.Name}))

		// cli:actor/v7action/role.go GetRoleGUID, as cf unset-space-role finds the role.
		found := decode[roleList](manager.get(ctx, "/v3/roles?user_guids="+developer.Name+"&types=space_developer&space_guids="+space+"&per_page=1&page=1"), http.StatusOK)
		Expect(grants(found)).To(Equal([]grant{{"space_developer", developer.Name}}))

		Expect(decode[roleList](manager.get(ctx, "/v3/roles?types=space_auditor"), http.StatusOK).Resources).
			To(ConsistOf(HaveField("Relationships", HaveKeyWithValue("space", HaveField("Data", HaveField("GUID", space))))))
	})

	It("refuses the list of a space's roles to a member who may not read its RoleBindings, as RBAC does", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "role-lister", "private")
		Expect(cfErrorOf(developer.get(ctx, "/v3/roles?space_guids="+space+"&include=user"), http.StatusForbidden)).To(HaveField("Title", "CF-NotAuthorized"))
	})

	It("deletes a role's RoleBinding as the user, and hides roles the user does not see as not found", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "role-deleter")
		space := testenv.CreateSpace(ctx, k8s, org, "revoked")
		developer := newUser(ctx, "developer")
		Expect(guidByName(ctx, manager, "/v3/spaces", "revoked", "organization_guids", org)).To(Equal(space))
		granted := decode[role](manager.post(ctx, "/v3/roles", roleBody("space_developer", "space", space, developer.Name)), http.StatusCreated)

		spaceRoles := func() []role {
			return decode[roleList](manager.get(ctx, "/v3/roles?space_guids="+space), http.StatusOK).Resources
		}
		Expect(spaceRoles()).To(ConsistOf(HaveField("GUID", granted.GUID)))
		Eventually(func() int { return developer.get(ctx, "/v3/spaces/"+space).status }).Should(Equal(http.StatusOK),
			"the API's cache holds the RoleBinding")

		stranger := newUser(ctx, "stranger")
		Expect(cfErrorOf(stranger.delete(ctx, "/v3/roles/"+granted.GUID), http.StatusNotFound)).To(HaveField("Detail", "Role not found"))
		Expect(bindingsOf(ctx, space, "cf-space-developer")).To(HaveLen(1))

		Expect(manager.delete(ctx, "/v3/roles/"+granted.GUID).status).To(Equal(http.StatusAccepted))
		Expect(bindingsOf(ctx, space, "cf-space-developer")).To(BeEmpty())
		Expect(spaceRoles()).To(BeEmpty())
		Eventually(func() int { return manager.delete(ctx, "/v3/roles/"+granted.GUID).status }).Should(Equal(http.StatusNotFound))
	})
})
