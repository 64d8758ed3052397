package upgrades

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The gauges of apps, on the manager's metrics endpoint (controller-runtime's registry):
//
//	cf_hnc_apps{reason}                      apps by the reason of their DropletCurrent condition
//	cf_hnc_app_run_images{stack, state}      apps by the stack of their droplet and whether it
//	                                         is on the stack's latest run image ("latest"), on an
//	                                         older one ("outdated"), on a stack their Builder no
//	                                         longer gives ("unavailable") or not known ("unknown")
//
// During a stack fix, outdated falls to zero as apps are rebased; apps that stay outdated say
// why in their DropletCurrent reason (Rebuilding, RebuildFailed, ...).

var (
	appsDesc = prometheus.NewDesc("cf_hnc_apps",
		"Apps by the reason of their DropletCurrent condition.", []string{"reason"}, nil)
	appRunImagesDesc = prometheus.NewDesc("cf_hnc_app_run_images",
		"Apps by the stack of the droplet they run and whether it is on the stack's latest run image (latest, outdated, unavailable, unknown).",
		[]string{"stack", "state"}, nil)
)

// scrapeTimeout bounds reading the apps for one scrape.
const scrapeTimeout = 5 * time.Second

// appsCollector counts the apps at each scrape, from the manager's cache: the counts are
// always those of the apps' status, and nothing is kept between scrapes.
type appsCollector struct {
	reader client.Reader
}

var _ prometheus.Collector = appsCollector{}

func (c appsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- appsDesc
	ch <- appRunImagesDesc
}

func (c appsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	apps := &cfv1alpha1.CFAppList{}
	if err := c.reader.List(ctx, apps); err != nil {
		ch <- prometheus.NewInvalidMetric(appsDesc, err)
		return
	}
	byReason, byRunImage := countApps(apps.Items)
	for reason, n := range byReason {
		ch <- prometheus.MustNewConstMetric(appsDesc, prometheus.GaugeValue, float64(n), reason)
	}
	for key, n := range byRunImage {
		ch <- prometheus.MustNewConstMetric(appRunImagesDesc, prometheus.GaugeValue, float64(n), key.stack, key.state)
	}
}

type runImageKey struct{ stack, state string }

// countApps counts apps by DropletCurrent reason, and by stack and run-image state.
func countApps(apps []cfv1alpha1.CFApp) (map[string]int, map[runImageKey]int) {
	byReason, byRunImage := map[string]int{}, map[runImageKey]int{}
	for i := range apps {
		app := &apps[i]
		if c := meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition); c != nil {
			byReason[c.Reason]++
		}
		if d := app.Status.Droplet; d != nil {
			byRunImage[runImageKey{stack: d.Stack, state: runImageState(app)}]++
		}
	}
	return byReason, byRunImage
}

func runImageState(app *cfv1alpha1.CFApp) string {
	switch d := app.Status.Droplet; {
	case d.BuilderStack == "":
		return "unknown"
	case d.BuilderStack != d.Stack:
		return "unavailable"
	case cfv1alpha1.SameImage(d.RunImage, d.LatestRunImage):
		return "latest"
	}
	return "outdated"
}

// registerMetrics registers the gauges with controller-runtime's registry, replacing those of
// an earlier manager of this process (the tests run several).
func registerMetrics(reader client.Reader) error {
	collector := appsCollector{reader: reader}
	err := metrics.Registry.Register(collector)
	if registered := (prometheus.AlreadyRegisteredError{}); errors.As(err, &registered) {
		metrics.Registry.Unregister(registered.ExistingCollector)
		err = metrics.Registry.Register(collector)
	}
	return err
}
