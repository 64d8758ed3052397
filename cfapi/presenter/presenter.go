package presenter

import (
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

// Link is a CF link.
type Link struct {
	Href   string `json:"href"`
	Method string `json:"method,omitempty"`
}

// Metadata are a resource's CF labels and annotations.
type Metadata struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Relationship is a to-one relationship; a nil Data is CF's "data": null.
type Relationship struct {
	Data *RelationshipData `json:"data"`
}

// RelationshipData names the related resource.
type RelationshipData struct {
	GUID string `json:"guid"`
}

func relationship(guid string) Relationship { return Relationship{Data: &RelationshipData{GUID: guid}} }

// Resource is what every CF resource has.
type Resource struct {
	GUID      string    `json:"guid"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Name      string    `json:"name"`
	Metadata  Metadata  `json:"metadata"`
}

// ListFields are the fields a list filters and orders by.
func (r Resource) ListFields() listing.Fields {
	return listing.Fields{GUID: r.GUID, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Labels: r.Metadata.Labels}
}

// resource presents an object with its display name. Kubernetes keeps no update time but in
// managed fields, which the API does not cache: updated_at is the last change of a condition,
// or the creation.
func resource(obj metav1.Object, name string, conditions []metav1.Condition) Resource {
	created := obj.GetCreationTimestamp().UTC()
	updated := created
	for _, c := range conditions {
		if t := c.LastTransitionTime.UTC(); t.After(updated) {
			updated = t
		}
	}
	return Resource{
		GUID: obj.GetName(), CreatedAt: created, UpdatedAt: updated, Name: name,
		Metadata: Metadata{Labels: userMetadata(obj.GetLabels()), Annotations: userMetadata(obj.GetAnnotations())},
	}
}

// systemDomains are the prefixes of the label and annotation keys that Kubernetes, HNC and
// cf-hnc write: they are theirs, not the user's CF metadata.
var systemDomains = []string{"workloads.cloudfoundry.org", "hnc.x-k8s.io", "kubernetes.io", "k8s.io"}

func userMetadata(all map[string]string) map[string]string {
	user := map[string]string{}
	for k, v := range all {
		prefix, _, hasPrefix := strings.Cut(k, "/")
		if hasPrefix && isSystemDomain(prefix) {
			continue
		}
		user[k] = v
	}
	return user
}

func isSystemDomain(prefix string) bool {
	for _, domain := range systemDomains {
		if prefix == domain || strings.HasSuffix(prefix, "."+domain) {
			return true
		}
	}
	return false
}

func href(base *url.URL, elem ...string) string { return base.JoinPath(elem...).String() }

// List is a page of a CF list.
type List[T any] struct {
	Pagination Pagination `json:"pagination"`
	Resources  []T        `json:"resources"`
	Included   *Included  `json:"included,omitempty"`
}

// Pagination is where a page of a list lies among all of it.
type Pagination struct {
	TotalResults int   `json:"total_results"`
	TotalPages   int   `json:"total_pages"`
	First        Link  `json:"first"`
	Last         Link  `json:"last"`
	Next         *Link `json:"next"`
	Previous     *Link `json:"previous"`
}

// ForList presents a page of total matching resources, with links to the other pages of the
// request at path.
func ForList[T any](page []T, total int, q listing.Query, base *url.URL, path string) List[T] {
	totalPages := (total + q.PerPage - 1) / q.PerPage
	pages := max(1, totalPages) // an empty list has a first and last page
	p := Pagination{
		TotalResults: total,
		TotalPages:   totalPages,
		First:        Link{Href: q.PageURL(base, path, 1)},
		Last:         Link{Href: q.PageURL(base, path, pages)},
	}
	if q.Page < pages {
		p.Next = &Link{Href: q.PageURL(base, path, q.Page+1)}
	}
	if q.Page > 1 {
		p.Previous = &Link{Href: q.PageURL(base, path, min(q.Page-1, pages))}
	}
	if page == nil {
		page = []T{}
	}
	return List[T]{Pagination: p, Resources: page}
}
