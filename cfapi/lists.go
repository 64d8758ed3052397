package cfapi

import (
	"net/http"

	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// writeList answers the page of items that the request's query asks for, each presented by
// present, with the links to the other pages; the query has been parsed into q.
func writeList[T any, P listing.Item](s *server, w http.ResponseWriter, r *http.Request, q listing.Query, items []T, present func(*T) P) {
	base := s.baseURL(r)
	presented := make([]P, len(items))
	for i := range items {
		presented[i] = present(&items[i])
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
}

// parseList reads a list request's query (listing.Parse).
func parseList(r *http.Request, orders ...string) (listing.Query, error) {
	return listing.Parse(r.URL.Query(), orders...)
}

// filter is a comma-separated filter of the request's query, nil if it has none.
func filter(r *http.Request, key string) []string {
	return listing.Values(r.URL.Query(), key)
}

// createdOrUpdated are the order_by fields of CF's lists of resources without names.
var createdOrUpdated = []string{"created_at", "updated_at"}

// listingApply filters, orders and pages presented resources as the query asks.
func listingApply[P listing.Item](items []P, q listing.Query) ([]P, int) {
	return listing.Apply(items, q)
}
