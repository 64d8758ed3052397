// Package metrics holds the manager's own Prometheus metrics, on controller-runtime's registry
// (the manager's metrics endpoint): how long a new space takes to be able to build, and how
// many writes the manager makes to the apiserver. The benchmark (bench/) and the idle e2e spec
// read the same figures that an operator scrapes in production.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metric names, for scrapers that look them up.
const (
	SpaceBuildReadyName = "cf_hnc_space_build_ready_seconds"
	APIWritesName       = "cf_hnc_api_writes_total"
)

var (
	// spaceBuildReady has buckets from the HNC floor (tens of milliseconds) to a space that
	// waits minutes behind a bulk creation.
	spaceBuildReady = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    SpaceBuildReadyName,
		Help:    "Seconds from a CFSpace's creation until cf-hnc first reported it BuildReady, for spaces created while this manager ran.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	})
	apiWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: APIWritesName,
		Help: "Writes that cf-hnc's reconcilers sent to the apiserver through the manager's client, by verb and kind; status writes have verb patch_status, update_status or create_<subresource>.",
	}, []string{"verb", "kind"})
)

func init() {
	metrics.Registry.MustRegister(spaceBuildReady, apiWrites)
}

// BuildReadyObserver observes cf_hnc_space_build_ready_seconds once per space: at its first
// BuildReady, and only for spaces created after the manager started, so that a restarted manager
// does not observe old spaces again with their whole age.
type BuildReadyObserver struct {
	started time.Time
	// observed holds the UIDs of spaces already observed: a space that loses BuildReady (its
	// credentials rotated badly) and gets it back is not a new space.
	observed sync.Map
}

// NewBuildReadyObserver returns an observer for a manager that starts now.
func NewBuildReadyObserver() *BuildReadyObserver {
	return &BuildReadyObserver{started: time.Now()}
}

// BuildReady records that the space with uid, created at created, was just reported BuildReady.
// It returns whether it observed it.
func (o *BuildReadyObserver) BuildReady(uid types.UID, created time.Time) bool {
	// Creation timestamps have whole seconds: a space created in the second the manager started
	// counts as created before it.
	if !created.After(o.started) {
		return false
	}
	if _, seen := o.observed.LoadOrStore(uid, struct{}{}); seen {
		return false
	}
	spaceBuildReady.Observe(time.Since(created).Seconds())
	return true
}

// Forget drops a deleted space, so that the observer holds only live spaces.
func (o *BuildReadyObserver) Forget(uid types.UID) {
	o.observed.Delete(uid)
}
