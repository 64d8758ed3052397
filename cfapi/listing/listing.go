package listing

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// CF's page sizes: the default, and the largest (the cf CLI asks for it with per_page=5000).
const (
	DefaultPerPage = 50
	MaxPerPage     = 5000
)

// Fields are what a list request filters and orders a resource by.
type Fields struct {
	GUID      string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Labels    map[string]string
	// Position orders buildpacks.
	Position int
}

// Item is a resource of a list.
type Item interface {
	ListFields() Fields
}

// Query is a list request's query.
type Query struct {
	Page, PerPage int
	orderBy       string
	descending    bool
	selector      labels.Selector
	names, guids  []string
	values        url.Values
}

// NamedOrders are the order_by fields of CF's lists of named resources (orgs, spaces, stacks).
var NamedOrders = []string{"created_at", "updated_at", "name"}

// Parse reads a list request's query; its errors are CF's BadQueryParameter. orders are the
// order_by fields of the listed resource, its default order first; without them, NamedOrders.
// Parameters that the API does not know are ignored, so that a newer cf CLI asking for more
// still gets its list.
func Parse(values url.Values, orders ...string) (Query, error) {
	if len(orders) == 0 {
		orders = NamedOrders
	}
	q := Query{Page: 1, PerPage: DefaultPerPage, orderBy: orders[0], selector: labels.Everything(), values: values}
	var err error
	if q.Page, err = number(values, "page", 1, math.MaxInt, "Page must be greater than 0"); err != nil {
		return Query{}, err
	}
	if q.PerPage, err = number(values, "per_page", DefaultPerPage, MaxPerPage, fmt.Sprintf("Per page must be between 1 and %d", MaxPerPage)); err != nil {
		return Query{}, err
	}
	if order := values.Get("order_by"); order != "" {
		q.orderBy, q.descending = strings.TrimPrefix(order, "-"), strings.HasPrefix(order, "-")
		if !slices.Contains(orders, q.orderBy) {
			return Query{}, cferror.BadQueryParameter("Order by can only be: '" + strings.Join(orders, "', '") + "'")
		}
	}
	if selector := values.Get("label_selector"); selector != "" {
		if q.selector, err = labels.Parse(selector); err != nil {
			return Query{}, cferror.BadQueryParameter("Invalid label_selector value: " + err.Error())
		}
	}
	q.names, q.guids = Values(values, "names"), Values(values, "guids")
	return q, nil
}

// number reads a parameter that must lie between 1 and most.
func number(values url.Values, key string, fallback, most int, invalid string) (int, error) {
	raw := values.Get(key)
	if raw == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > most {
		return 0, cferror.BadQueryParameter(invalid)
	}
	return n, nil
}

// Values returns a comma-separated filter of the query, without empty values; nil if the
// query has none. A comma inside one name reaches the API as a literal "%2C": the cf CLI
// escapes it so before it joins the names (cli:api/cloudcontroller/ccv3/query.go).
func Values(values url.Values, key string) []string {
	var parts []string
	for _, p := range strings.Split(values.Get(key), ",") {
		if p != "" {
			parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(p, "%2C", ","), "%2c", ","))
		}
	}
	return parts
}

// Apply filters items by names (compared as CF compares display names, ignoring case), guids
// and label_selector, orders them, and returns the requested page and the number of all that
// matched.
func Apply[T Item](items []T, q Query) (page []T, total int) {
	matched := slices.DeleteFunc(slices.Clone(items), func(item T) bool { return !q.matches(item.ListFields()) })
	slices.SortStableFunc(matched, func(a, b T) int {
		order := q.compare(a.ListFields(), b.ListFields())
		if q.descending {
			order = -order
		}
		return cmp.Or(order, strings.Compare(a.ListFields().GUID, b.ListFields().GUID))
	})
	start := min((q.Page-1)*q.PerPage, len(matched))
	end := min(start+q.PerPage, len(matched))
	return matched[start:end], len(matched)
}

func (q Query) matches(f Fields) bool {
	if q.names != nil && !slices.ContainsFunc(q.names, func(n string) bool { return cfv1alpha1.SameDisplayName(n, f.Name) }) {
		return false
	}
	if q.guids != nil && !slices.Contains(q.guids, f.GUID) {
		return false
	}
	return q.selector.Matches(labels.Set(f.Labels))
}

func (q Query) compare(a, b Fields) int {
	switch q.orderBy {
	case "name":
		// Ignoring case, as names are compared, then exactly, so that the order is stable.
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.Name, b.Name))
	case "updated_at":
		return a.UpdatedAt.Compare(b.UpdatedAt)
	case "position":
		return cmp.Compare(a.Position, b.Position)
	}
	return a.CreatedAt.Compare(b.CreatedAt)
}

// PageURL is the request's URL at another page, absolute on base: the cf CLI follows
// pagination.next verbatim.
func (q Query) PageURL(base *url.URL, path string, page int) string {
	values := url.Values{}
	for k, v := range q.values {
		values[k] = v
	}
	values.Set("page", strconv.Itoa(page))
	values.Set("per_page", strconv.Itoa(q.PerPage))
	u := base.JoinPath(path)
	u.RawQuery = values.Encode()
	return u.String()
}
