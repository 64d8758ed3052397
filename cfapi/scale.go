package cfapi

import (
	"math"
	"net/http"
	"strings"

	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// scaleRequest is the body of a process's scale action, as cf scale sends it
// (cli:resources/process_resource.go): only the flags given are set.
type scaleRequest struct {
	Instances    *int64 `json:"instances"`
	MemoryInMB   *int64 `json:"memory_in_mb"`
	DiskInMB     *int64 `json:"disk_in_mb"`
	LogRateLimit *int64 `json:"log_rate_limit_in_bytes_per_second"`
}

// maxDBInt is the largest instances, memory or disk that Cloud Controller accepts.
const maxDBInt = math.MaxInt32

// unlimitedLogRate is CF's log rate limit that limits nothing, the only one cf-hnc has.
const unlimitedLogRate = -1

// problems are what Cloud Controller refuses of a scale request, in its words
// (cloud_controller_ng:app/messages/process_scale_message.rb), then what cf-hnc cannot do: limit
// the log rate. The limits of cf-hnc's processes (instances, memory and disk) are the
// CFProcess's own, which the kube-apiserver enforces.
func (req scaleRequest) problems() []string {
	var problems []string
	for _, size := range []struct {
		field    string
		value    *int64
		positive bool
	}{{"Instances", req.Instances, false}, {"Memory in mb", req.MemoryInMB, true}, {"Disk in mb", req.DiskInMB, true}} {
		switch {
		case size.value == nil:
		case size.positive && *size.value <= 0:
			problems = append(problems, size.field+" must be greater than 0")
		case *size.value < 0:
			problems = append(problems, size.field+" must be greater than or equal to 0")
		case *size.value > maxDBInt:
			problems = append(problems, size.field+" must be less than or equal to 2147483647")
		}
	}
	switch limit := req.LogRateLimit; {
	case limit == nil || *limit == unlimitedLogRate:
	case *limit < unlimitedLogRate:
		problems = append(problems, "Log rate limit in bytes per second must be greater than or equal to -1")
	default:
		problems = append(problems, "cf-hnc does not limit the log rate of processes: only -1 (unlimited) is accepted")
	}
	return problems
}

// change is what the request changes of a process, once it has no problems.
func (req scaleRequest) change() cf.ProcessChange {
	c := cf.ProcessChange{MemoryMB: req.MemoryInMB, DiskMB: req.DiskInMB}
	if req.Instances != nil {
		c.Instances = ptr.To(int32(*req.Instances))
	}
	return c
}

// scaleAppProcess is POST /v3/apps/:guid/processes/:type/actions/scale (cf scale).
func (s *server) scaleAppProcess(w http.ResponseWriter, r *http.Request) error {
	processes, err := s.processesOfApp(r)
	if err != nil {
		return err
	}
	for i := range processes {
		if processes[i].Spec.ProcessType == r.PathValue("type") {
			return s.scale(w, r, &processes[i])
		}
	}
	return cferror.ResourceNotFound(cf.ProcessResource)
}

// scaleProcess is POST /v3/processes/:guid/actions/scale, the process's scale link.
func (s *server) scaleProcess(w http.ResponseWriter, r *http.Request) error {
	p, err := s.findProcess(r)
	if err != nil {
		return err
	}
	return s.scale(w, r, p)
}

// scale sets the process's instances, memory and disk as the request asks, as the user, and
// answers the process with Cloud Controller's 202. A request with a problem changes nothing.
// Instances start and stop at once; new limits replace the instances one at a time, and
// cf scale restarts the app after them, as on Cloud Foundry.
func (s *server) scale(w http.ResponseWriter, r *http.Request, p *cfv1alpha1.CFProcess) error {
	var req scaleRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if problems := req.problems(); problems != nil {
		return cferror.UnprocessableEntity(strings.Join(problems, ", "))
	}
	if _, err := cf.UpdateProcess(r.Context(), userOf(r).Client, p, req.change()); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, presenter.ForProcess(p, s.baseURL(r)))
	return nil
}
