package listing

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

type field Fields

func (f field) ListFields() Fields { return Fields(f) }

var _ = Describe("Pager", func() {
	It("keeps no more than the page and those before it, and pages as sorting everything would", func() {
		epoch := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		items := make([]field, 10_000)
		for i := range items {
			items[i] = field{GUID: fmt.Sprintf("g%05d", i), Name: fmt.Sprintf("n%d", rand.IntN(100)), CreatedAt: epoch.Add(time.Duration(rand.IntN(1000)) * time.Second)}
		}
		for _, query := range []string{"per_page=7&page=3", "order_by=-name&per_page=50&page=10", "order_by=name&per_page=5000&page=2"} {
			values, err := url.ParseQuery(query)
			Expect(err).NotTo(HaveOccurred())
			q, err := Parse(values)
			Expect(err).NotTo(HaveOccurred())
			p := NewPager[field](q)
			for _, item := range items {
				p.Offer(item)
				Expect(p.kept.Len()).To(BeNumerically("<=", q.Page*q.PerPage), query)
			}
			page, total := p.Page()
			Expect(total).To(Equal(len(items)))

			sorted := slices.Clone(items)
			slices.SortFunc(sorted, func(a, b field) int {
				if q.before(a, b) {
					return -1
				}
				return 1
			})
			start := (q.Page - 1) * q.PerPage
			Expect(page).To(Equal(sorted[start:min(start+q.PerPage, len(sorted))]), query)
		}
	})
})
