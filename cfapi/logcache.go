package cfapi

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// The API is also the cf CLI's log-cache (the root document's log_cache link), for the staging
// lines that cf push and cf restage print. The CLI reads with log-cache's Walk: the newest
// envelope first (limit=1, descending), then every envelope from a second before it on,
// asking each time from just after the last one it got (start_time). So a line must keep its
// timestamp from one read to the next. Errors here only make the CLI warn.

// logCacheInfo is log-cache's GET /api/v1/info.
func (s *server) logCacheInfo(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, presenter.ForLogCacheInfo())
	return nil
}

// readLogs is log-cache's GET /api/v1/read/:source-id, for the source id of an app, its GUID:
// the staging lines of the app's kpack build pods (labelled with the app's GUID), read as the
// user, who may read the pods of the space.
func (s *server) readLogs(w http.ResponseWriter, r *http.Request) error {
	q, err := parseLogQuery(r.URL.Query())
	if err != nil {
		return err
	}
	session := sessionOf(r)
	app, err := s.findApp(r.Context(), session, r.PathValue("source"))
	if err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := session.Client.List(r.Context(), pods, client.InNamespace(app.Namespace), client.MatchingLabels{cfv1alpha1.AppLabel: app.Name}); err != nil {
		return cferror.FromKubernetes(err, "Pod")
	}
	writeJSON(w, http.StatusOK, presenter.ForStagingLines(app.Name, q.apply(stagingLines(pods.Items))))
	return nil
}

// logQuery is what a log-cache read asks for.
type logQuery struct {
	start, end time.Time
	limit      int
	descending bool
	// logs is false when envelope_types names other types than LOG only: staging lines are LOG
	// envelopes.
	logs bool
}

// log-cache's page sizes.
const (
	defaultLogLimit = 100
	maxLogLimit     = 1000
)

func parseLogQuery(values url.Values) (logQuery, error) {
	q := logQuery{start: time.Unix(0, 0), end: time.Unix(0, math.MaxInt64), limit: defaultLogLimit, logs: true}
	for key, set := range map[string]func(int64){
		"start_time": func(ns int64) { q.start = time.Unix(0, ns) },
		"end_time":   func(ns int64) { q.end = time.Unix(0, ns) },
		"limit":      func(n int64) { q.limit = int(min(max(n, 1), maxLogLimit)) },
	} {
		if raw := values.Get(key); raw != "" {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return logQuery{}, cferror.BadQueryParameter(key + " must be a whole number")
			}
			set(n)
		}
	}
	q.descending = values.Get("descending") == "true"
	if types := values["envelope_types"]; len(types) > 0 {
		q.logs = slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, "LOG") })
	}
	return q, nil
}

// apply keeps the lines from start up to, not including, end, the newest first when descending,
// up to limit.
func (q logQuery) apply(lines []presenter.StagingLine) []presenter.StagingLine {
	if !q.logs {
		return nil
	}
	lines = slices.DeleteFunc(lines, func(l presenter.StagingLine) bool { return l.Time.Before(q.start) || !l.Time.Before(q.end) })
	if q.descending {
		slices.Reverse(lines)
	}
	return lines[:min(q.limit, len(lines))]
}

// stagingLines are the lines of the build pods' steps (their init containers), oldest first:
// when each started, and how it ended; a failed step's end of log (its termination message,
// which cf-hnc's policy has the kubelet fill from the log) follows as error lines. Each line has
// the time that the pod's status gives it, the same at every read.
func stagingLines(pods []corev1.Pod) []presenter.StagingLine {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	var lines []presenter.StagingLine
	for _, pod := range pods {
		for i, step := range pod.Status.InitContainerStatuses {
			lines = append(lines, stepLines(i, step)...)
		}
	}
	slices.SortStableFunc(lines, func(a, b presenter.StagingLine) int { return a.Time.Compare(b.Time) })
	return lines
}

func stepLines(index int, step corev1.ContainerStatus) []presenter.StagingLine {
	line := func(at time.Time, failed bool, format string, args ...any) presenter.StagingLine {
		return presenter.StagingLine{Time: at, Step: index, Message: fmt.Sprintf(format, args...), Error: failed}
	}
	switch state := step.State; {
	case state.Running != nil:
		return []presenter.StagingLine{line(state.Running.StartedAt.Time, false, "%s: started", step.Name)}
	case state.Terminated != nil:
		t := state.Terminated
		lines := []presenter.StagingLine{line(t.StartedAt.Time, false, "%s: started", step.Name)}
		if t.ExitCode == 0 {
			return append(lines, line(t.FinishedAt.Time, false, "%s: done", step.Name))
		}
		lines = append(lines, line(t.FinishedAt.Time, true, "%s: failed with exit code %d", step.Name, t.ExitCode))
		for _, l := range strings.Split(strings.TrimSpace(t.Message), "\n") {
			if l = strings.TrimRight(l, "\r"); l != "" {
				lines = append(lines, line(t.FinishedAt.Time, true, "%s", l))
			}
		}
		return lines
	}
	return nil
}
