package listing

import (
	"cmp"
	"container/heap"
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

// MaxPage is the last page a list may ask for: the items before it, (page-1)*per_page, must be
// a number the API can count, whatever per_page is.
const MaxPage = math.MaxInt / MaxPerPage

// MaxFilterValues bounds the distinct values of one comma-separated filter (guids, names,
// space_guids, ...): the cf CLI sends at most 200 GUIDs at once (cli:util/batcher), and every
// value costs a comparison per item listed.
const MaxFilterValues = 500

// MaxLabelSelector bounds a label_selector, which is matched against every item listed.
const MaxLabelSelector = 4096

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
	if q.Page, err = number(values, "page", 1, MaxPage, fmt.Sprintf("Page must be between 1 and %d", MaxPage)); err != nil {
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
		if len(selector) > MaxLabelSelector {
			return Query{}, cferror.BadQueryParameter(fmt.Sprintf("Label selector may be at most %d characters long", MaxLabelSelector))
		}
		if q.selector, err = labels.Parse(selector); err != nil {
			return Query{}, cferror.BadQueryParameter("Invalid label_selector value: " + err.Error())
		}
	}
	if err := checkFilters(values); err != nil {
		return Query{}, err
	}
	q.names, q.guids = Values(values, "names"), Values(values, "guids")
	return q, nil
}

// checkFilters refuses a parameter whose comma-separated values, once deduplicated, are more
// than MaxFilterValues; label_selector, whose commas separate the values of one requirement,
// is bounded by its length.
func checkFilters(values url.Values) error {
	for key := range values {
		if key != "label_selector" && len(Values(values, key)) > MaxFilterValues {
			return cferror.BadQueryParameter(fmt.Sprintf("'%s' may name at most %d distinct values", key, MaxFilterValues))
		}
	}
	return nil
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

// Values returns a comma-separated filter of the query, each value once, in the order given,
// without empty values; nil if the query has none. A comma inside one name reaches the API as a
// literal "%2C": the cf CLI escapes it so before it joins the names
// (cli:api/cloudcontroller/ccv3/query.go).
func Values(values url.Values, key string) []string {
	var parts []string
	seen := map[string]bool{}
	for p := range strings.SplitSeq(values.Get(key), ",") {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "%2C", ","), "%2c", ",")
		if p != "" && !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	return parts
}

// Apply filters items by names (compared as CF compares display names, ignoring case), guids
// and label_selector, orders them, and returns the requested page and the number of all that
// matched.
func Apply[T Item](items []T, q Query) (page []T, total int) {
	p := NewPager[T](q)
	for _, item := range items {
		p.Offer(item)
	}
	return p.Page()
}

// Pager pages a list while it is read, so that a list holds no more than the requested page and
// those before it, however many items it reads: each item offered is filtered by the query
// (names, guids, label_selector) and counted, and kept only while it may still lie on the page
// or before it in the query's order.
type Pager[T Item] struct {
	q Query
	// kept is a heap whose first item is the last of them in the query's order: the one to drop
	// when an item that comes before it is offered to a full pager.
	kept keptItems[T]
	// keep is how many items lie on the page and before it.
	keep  int
	total int
}

// NewPager returns a Pager for the query.
func NewPager[T Item](q Query) *Pager[T] {
	return &Pager[T]{q: q, kept: keptItems[T]{less: q.before}, keep: q.Page * q.PerPage}
}

// Offer counts the item if it passes the query's filters, and keeps it if it may lie on the page.
func (p *Pager[T]) Offer(item T) {
	if !p.q.matches(item.ListFields()) {
		return
	}
	p.total++
	switch {
	case p.kept.Len() < p.keep:
		heap.Push(&p.kept, item)
	case p.q.before(item, p.kept.items[0]):
		p.kept.items[0] = item
		heap.Fix(&p.kept, 0)
	}
}

// Page returns the requested page in the query's order, and the number of items that passed
// the filters.
func (p *Pager[T]) Page() (page []T, total int) {
	items := p.kept.items
	slices.SortFunc(items, func(a, b T) int {
		if p.q.before(a, b) {
			return -1
		}
		return 1
	})
	start := min((p.q.Page-1)*p.q.PerPage, len(items))
	return items[start:], p.total
}

// before says whether a comes before b in the query's order: by its field, then by GUID, so
// that the order is total and a page the same at every read.
func (q Query) before(a, b Item) bool {
	fa, fb := a.ListFields(), b.ListFields()
	order := q.compare(fa, fb)
	if q.descending {
		order = -order
	}
	return cmp.Or(order, strings.Compare(fa.GUID, fb.GUID)) < 0
}

// keptItems is a heap (container/heap) of the items a Pager keeps, the last in the order first.
type keptItems[T Item] struct {
	items []T
	less  func(a, b Item) bool
}

func (k keptItems[T]) Len() int           { return len(k.items) }
func (k keptItems[T]) Less(i, j int) bool { return k.less(k.items[j], k.items[i]) }
func (k keptItems[T]) Swap(i, j int)      { k.items[i], k.items[j] = k.items[j], k.items[i] }
func (k *keptItems[T]) Push(x any)        { k.items = append(k.items, x.(T)) }
func (k *keptItems[T]) Pop() any {
	last := k.items[len(k.items)-1]
	k.items = k.items[:len(k.items)-1]
	return last
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
