package presenter

import (
	"net/url"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

// Role is a CF role: a user's CF role in an org or a space, which cf-hnc holds as a subject of
// a RoleBinding of the role's ClusterRole. Kubernetes has no user records: a user's GUID is
// their user name.
type Role struct {
	GUID          string                  `json:"guid"`
	CreatedAt     time.Time               `json:"created_at"`
	UpdatedAt     time.Time               `json:"updated_at"`
	Type          string                  `json:"type"`
	Relationships map[string]Relationship `json:"relationships"`
	Links         map[string]Link         `json:"links"`
}

// ListFields are the fields a list filters and orders by.
func (r Role) ListFields() listing.Fields {
	return listing.Fields{GUID: r.GUID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// ForRole presents a role in an org or a space.
func ForRole(r cf.Role, base *url.URL) Role {
	role := Role{
		GUID: r.GUID, CreatedAt: r.Created.UTC(), UpdatedAt: r.Created.UTC(), Type: r.Type,
		Relationships: map[string]Relationship{"user": relationship(r.User), "organization": {}, "space": {}},
		Links:         map[string]Link{"self": {Href: href(base, "v3", "roles", r.GUID)}},
	}
	if r.OrgGUID != "" {
		role.Relationships["organization"] = relationship(r.OrgGUID)
		role.Links["organization"] = Link{Href: href(base, "v3", "organizations", r.OrgGUID)}
	} else {
		role.Relationships["space"] = relationship(r.SpaceGUID)
		role.Links["space"] = Link{Href: href(base, "v3", "spaces", r.SpaceGUID)}
	}
	return role
}

// User is a CF user as a role list includes it (include=user); `cf space-users` prints its
// presentation name and its origin, CF's name of the identity provider, which for cf-hnc is
// Kubernetes (an empty origin would print as "client").
type User struct {
	GUID             string `json:"guid"`
	Username         string `json:"username"`
	PresentationName string `json:"presentation_name"`
	Origin           string `json:"origin"`
}

// ForUser presents the user of a Kubernetes user name.
func ForUser(name string) User {
	return User{GUID: name, Username: name, PresentationName: name, Origin: "kubernetes"}
}

// Included are the resources that a list request asked to include.
type Included struct {
	Users []User `json:"users"`
}
