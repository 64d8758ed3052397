package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"k8s.io/client-go/rest"

	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// apiserverRequests is the apiserver's apiserver_request_total, by verb, resource and code.
type apiserverRequests map[request]float64

type request struct{ verb, resource, code string }

// apiserverRequests reads the apiserver's request counters from its /metrics.
func (b *bench) apiserverRequests(ctx context.Context) (apiserverRequests, error) {
	httpClient, err := rest.HTTPClientFor(b.cp.Config)
	if err != nil {
		return nil, err
	}
	// The host of the config may carry a path; the metrics are at the server's root.
	endpoint, err := url.Parse(b.cp.Config.Host)
	if err != nil {
		return nil, err
	}
	endpoint.Path = "/metrics"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	families, err := metrics.ScrapeURL(ctx, httpClient, endpoint.String(), nil)
	if err != nil {
		return nil, err
	}
	family := families["apiserver_request_total"]
	if family == nil {
		return nil, fmt.Errorf("the apiserver's metrics have no apiserver_request_total")
	}
	counts := apiserverRequests{}
	for _, m := range family.GetMetric() {
		var r request
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				r.verb = l.GetValue()
			case "resource":
				r.resource = l.GetValue()
			case "code":
				r.code = l.GetValue()
			}
		}
		counts[r] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// since counts the requests that a bulk's analysis needs, served between before and a.
func (a apiserverRequests) since(before apiserverRequests) Requests {
	served := func(matches func(request) bool) float64 {
		var n float64
		for r, count := range a {
			if matches(r) {
				n += count - before[r]
			}
		}
		return n
	}
	return Requests{
		ServiceAccountDeletes: served(func(r request) bool { return r.verb == "DELETE" && r.resource == "serviceaccounts" }),
		ServiceAccountDeletesNotFound: served(func(r request) bool {
			return r.verb == "DELETE" && r.resource == "serviceaccounts" && r.code == "404"
		}),
		Conflicts: served(func(r request) bool { return r.code == "409" }),
	}
}
