package metrics

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape reads the manager's metrics endpoint at addr (host:port, HTTPS) as Prometheus would,
// with a bearer token that may GET /metrics. The e2e suite and the benchmark read cf-hnc's
// figures this way, from the process, not from inside it.
func Scrape(ctx context.Context, addr, token string) (map[string]*dto.MetricFamily, error) {
	// The endpoint's certificate is self-signed by controller-runtime; the token is what
	// matters to it.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return ScrapeURL(ctx, c, "https://"+addr+"/metrics", http.Header{"Authorization": {"Bearer " + token}})
}

// ScrapeURL reads the metrics endpoint at url through c, with header, and parses what
// Prometheus would.
func ScrapeURL(ctx context.Context, c *http.Client, url string, header http.Header) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Writes sums cf_hnc_api_writes_total of a scrape, in total and by "verb kind".
func Writes(families map[string]*dto.MetricFamily) (total float64, byVerbKind map[string]float64) {
	byVerbKind = map[string]float64{}
	family := families[APIWritesName]
	if family == nil {
		return 0, byVerbKind
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		v := m.GetCounter().GetValue()
		total += v
		byVerbKind[labels["verb"]+" "+labels["kind"]] += v
	}
	return total, byVerbKind
}
