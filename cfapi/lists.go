package cfapi

import (
	"net/http"

	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// writeList answers the page of items that the request's query asks for, each presented by
// present, with the links to the other pages; the query has been parsed into q.
func writeList[T any, P listing.Item](s *server, w http.ResponseWriter, r *http.Request, q listing.Query, items []T, present func(*T) P) {
	pager := listing.NewPager[P](q)
	for i := range items {
		pager.Offer(present(&items[i]))
	}
	writePage(s, w, r, q, pager)
}

// writeRead answers the page of the items that read lists, as the user reads them a chunk at a
// time (cf.AppsIn and the like): each item is presented as it comes, and only those that may
// lie on the page are kept (listing.Pager), however many the spaces hold. present returns false
// for an item that a filter of the request beyond the query's leaves out.
func writeRead[T any, P listing.Item](s *server, w http.ResponseWriter, r *http.Request, q listing.Query, read func(visit func(*T)) error, present func(*T) (P, bool)) error {
	pager := listing.NewPager[P](q)
	if err := read(func(item *T) {
		if p, ok := present(item); ok {
			pager.Offer(p)
		}
	}); err != nil {
		return err
	}
	writePage(s, w, r, q, pager)
	return nil
}

// writePage answers the page that a pager holds, with the links to the other pages.
func writePage[P listing.Item](s *server, w http.ResponseWriter, r *http.Request, q listing.Query, pager *listing.Pager[P]) {
	page, total := pager.Page()
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, s.baseURL(r), r.URL.Path))
}

// parseList reads a list request's query (listing.Parse).
func parseList(r *http.Request, orders ...string) (listing.Query, error) {
	return listing.Parse(r.URL.Query(), orders...)
}

// filter is a comma-separated filter of the request's query, each value once, nil if it has none.
func filter(r *http.Request, key string) []string {
	return listing.Values(r.URL.Query(), key)
}

// createdOrUpdated are the order_by fields of CF's lists of resources without names.
var createdOrUpdated = []string{"created_at", "updated_at"}

// listingApply filters, orders and pages presented resources as the query asks.
func listingApply[P listing.Item](items []P, q listing.Query) ([]P, int) {
	return listing.Apply(items, q)
}
