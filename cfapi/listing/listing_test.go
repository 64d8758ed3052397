package listing_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

func TestListing(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CF list queries")
}

type item listing.Fields

func (i item) ListFields() listing.Fields { return listing.Fields(i) }

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

var items = []item{
	{GUID: "g2", Name: "beta", CreatedAt: epoch.Add(2 * time.Hour), UpdatedAt: epoch.Add(2 * time.Hour), Labels: map[string]string{"env": "prod"}},
	{GUID: "g1", Name: "Alpha", CreatedAt: epoch.Add(time.Hour), UpdatedAt: epoch.Add(5 * time.Hour)},
	{GUID: "g3", Name: "a,b", CreatedAt: epoch.Add(3 * time.Hour), UpdatedAt: epoch.Add(3 * time.Hour), Labels: map[string]string{"env": "dev"}},
}

func guids(query string) ([]string, int) {
	GinkgoHelper()
	values, err := url.ParseQuery(query)
	Expect(err).NotTo(HaveOccurred())
	q, err := listing.Parse(values)
	Expect(err).NotTo(HaveOccurred())
	page, total := listing.Apply(items, q)
	var g []string
	for _, i := range page {
		g = append(g, i.GUID)
	}
	return g, total
}

var _ = Describe("Apply", func() {
	DescribeTable("filters, orders and pages as the Cloud Controller does",
		func(query string, want []string, total int) {
			got, n := guids(query)
			Expect(got).To(Equal(want))
			Expect(n).To(Equal(total))
		},
		Entry("oldest first by default", "", []string{"g1", "g2", "g3"}, 3),
		Entry("by name", "order_by=name", []string{"g3", "g1", "g2"}, 3),
		Entry("by name, descending", "order_by=-name", []string{"g2", "g1", "g3"}, 3),
		Entry("by update", "order_by=-updated_at", []string{"g1", "g3", "g2"}, 3),
		Entry("names ignore case", "names=alpha,BETA", []string{"g1", "g2"}, 2),
		Entry("a comma in a name arrives as %2C", "names=a%252Cb", []string{"g3"}, 1),
		Entry("guids", "guids=g3,g2", []string{"g2", "g3"}, 2),
		Entry("empty values are none", "guids=g3,,", []string{"g3"}, 1),
		Entry("label selector", "label_selector=env+in+(prod,dev)", []string{"g2", "g3"}, 2),
		Entry("label selector, absence", "label_selector=!env", []string{"g1"}, 1),
		Entry("a page", "per_page=2&page=2", []string{"g3"}, 3),
		Entry("a page past the end", "per_page=2&page=9", nil, 3),
		Entry("unknown parameters are ignored", "include=organization", []string{"g1", "g2", "g3"}, 3),
		Entry("a value named twice is one", "guids=g3,g3,g2,g3", []string{"g2", "g3"}, 2),
		Entry("the last page there can be", fmt.Sprintf("per_page=%d&page=%d", listing.MaxPerPage, listing.MaxPage), nil, 3),
	)

	It("takes any number of copies of one value as the value", func() {
		got, n := guids("guids=" + strings.Repeat("g1,", 10_000))
		Expect(got).To(Equal([]string{"g1"}))
		Expect(n).To(Equal(1))
	})

	DescribeTable("refuses what the Cloud Controller refuses, as a bad query parameter",
		func(query string) {
			values, err := url.ParseQuery(query)
			Expect(err).NotTo(HaveOccurred())
			_, err = listing.Parse(values)
			var cf *cferror.Error
			Expect(errors.As(err, &cf)).To(BeTrue())
			Expect(cf.Title).To(Equal("CF-BadQueryParameter"))
		},
		Entry("per_page 0", "per_page=0"),
		Entry("per_page above 5000", "per_page=5001"),
		Entry("page 0", "page=0"),
		Entry("a page that is no number", "page=two"),
		Entry("an unknown order", "order_by=size"),
		Entry("a broken selector", "label_selector=a+in+("),
		Entry("a page whose items before it cannot be counted", "page=4611686018427387905&per_page=2"),
		Entry("a page past the last", fmt.Sprintf("page=%d", listing.MaxPage+1)),
		Entry("a page beyond a number", "page=99999999999999999999999"),
		Entry("more distinct values of a filter than a list compares", "guids="+distinct(listing.MaxFilterValues+1)),
		Entry("a label selector longer than a list matches", "label_selector="+strings.Repeat("a", listing.MaxLabelSelector)+"%3Db"),
	)

	It("says which page there can be", func() {
		_, err := listing.Parse(url.Values{"page": {"4611686018427387905"}})
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("Page must be between 1 and %d", listing.MaxPage))))
	})
})

// distinct is a comma-separated list of n distinct GUIDs.
func distinct(n int) string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("g%d", i)
	}
	return strings.Join(values, ",")
}

var _ = Describe("A resource's own orders", func() {
	It("orders by the first by default, and refuses the orders of other resources", func() {
		positioned := []item{{GUID: "late", Position: 2}, {GUID: "early", Position: 1, CreatedAt: epoch.Add(time.Hour)}}
		q, err := listing.Parse(url.Values{}, "position", "created_at")
		Expect(err).NotTo(HaveOccurred())
		page, _ := listing.Apply(positioned, q)
		Expect(page).To(Equal([]item{positioned[1], positioned[0]}))

		_, err = listing.Parse(url.Values{"order_by": {"name"}}, "position", "created_at")
		var cf *cferror.Error
		Expect(errors.As(err, &cf)).To(BeTrue())
		Expect(cf.Detail).To(Equal("The query parameter is invalid: Order by can only be: 'position', 'created_at'"))
	})
})

var _ = Describe("PageURL", func() {
	It("keeps the request's query, absolute on the API's address", func() {
		values, err := url.ParseQuery("names=a%252Cb&order_by=name&per_page=2")
		Expect(err).NotTo(HaveOccurred())
		q, err := listing.Parse(values)
		Expect(err).NotTo(HaveOccurred())
		base := &url.URL{Scheme: "https", Host: "api.example.com"}
		Expect(q.PageURL(base, "/v3/spaces", 3)).To(Equal("https://api.example.com/v3/spaces?names=a%252Cb&order_by=name&page=3&per_page=2"))
	})
})
