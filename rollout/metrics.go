package rollout

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rebuildPods is the gauge of a rollout, on the manager's metrics endpoint
// (controller-runtime's registry):
//
//	cf_hnc_rebuild_pods{state}   paced rebuild pods of kpack Builds in CF's tree "waiting" for
//	                             their turn or "running"
var rebuildPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "cf_hnc_rebuild_pods",
	Help: "Rebuild pods of kpack Builds in CF's tree that cf-hnc paces, by state: waiting for their turn, or running.",
}, []string{"state"})

// registerMetrics registers the gauge with controller-runtime's registry, once per process (the
// tests run several managers).
func registerMetrics() error {
	err := metrics.Registry.Register(rebuildPods)
	if registered := (prometheus.AlreadyRegisteredError{}); errors.As(err, &registered) && registered.ExistingCollector == rebuildPods {
		return nil
	}
	return err
}
