package cfapi

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"
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
// the staging lines of the app (cf.StagingLines), read as the user, who may read the pods of
// the space.
func (s *server) readLogs(w http.ResponseWriter, r *http.Request) error {
	q, err := parseLogQuery(r.URL.Query())
	if err != nil {
		return err
	}
	app, err := s.findApp(r, r.PathValue("source"))
	if err != nil {
		return err
	}
	lines, err := cf.StagingLines(r.Context(), userOf(r).Client, app)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForStagingLines(app.Name, q.apply(lines)))
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
func (q logQuery) apply(lines []cf.StagingLine) []cf.StagingLine {
	if !q.logs {
		return nil
	}
	lines = slices.DeleteFunc(lines, func(l cf.StagingLine) bool { return l.Time.Before(q.start) || !l.Time.Before(q.end) })
	if q.descending {
		slices.Reverse(lines)
	}
	return lines[:min(q.limit, len(lines))]
}
