package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The limits of the CFProcess CRD, checked before the cluster is asked.
const (
	maxInstances = 100
	minMB        = 16
	maxMB        = 65536
)

// healthCheckTypes are the values of -u, as the cf CLI names them.
var healthCheckTypes = []string{string(cfv1alpha1.PortHealthCheck), string(cfv1alpha1.HTTPHealthCheck), string(cfv1alpha1.ProcessHealthCheck)}

// appProcesses lists the processes of an app: web first, then by type.
func appProcesses(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) ([]cfv1alpha1.CFProcess, error) {
	processes, err := cf.ProcessesOf(ctx, c, app)
	if err != nil {
		return nil, fmt.Errorf("listing the processes of app %q: %w", app.Spec.DisplayName, err)
	}
	return processes, nil
}

// processFlags are the flags that scale a process (-i, -m, -k: push and scale) and set its
// health check (-u, --endpoint: push).
type processFlags struct {
	instances        int32
	memory, disk     string
	healthCheckType  string
	endpoint         string
	withHealthChecks bool
}

func (f *processFlags) addScaleFlags(cmd *cobra.Command) {
	cmd.Flags().Int32VarP(&f.instances, "instances", "i", 0, fmt.Sprintf("How many instances of the process run while the app is started (0 to %d; default of a new process: %d).", maxInstances, cfv1alpha1.DefaultInstances))
	cmd.Flags().StringVarP(&f.memory, "memory", "m", "", "The memory limit of each instance, with a unit: 256M, 1G (16M to 64G; default of a new process: 1G).")
	cmd.Flags().StringVarP(&f.disk, "disk", "k", "", "The disk limit of each instance (its files and logs), with a unit: 512M, 2G (16M to 64G; default of a new process: 1G).")
}

func (f *processFlags) addHealthCheckFlags(cmd *cobra.Command) {
	f.withHealthChecks = true
	cmd.Flags().StringVarP(&f.healthCheckType, "health-check-type", "u", "",
		`How the platform tells that an instance is up: "port" (it accepts connections on $PORT; the default of a new process), "http" (a GET of --endpoint answers 2xx or 3xx) or "process" (it runs).`)
	cmd.Flags().StringVar(&f.endpoint, "endpoint", "", `The path that an http health check GETs (with -u http; default "/").`)
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("health-check-type", func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
		return completion(healthCheckTypes, typed)
	}))
}

// parse turns the flags given on cmd into a change, refusing what the CRD would refuse.
func (f *processFlags) parse(cmd *cobra.Command) (cf.ProcessChange, error) {
	var pc cf.ProcessChange
	changed := cmd.Flags().Changed
	if changed("instances") {
		if f.instances < 0 || f.instances > maxInstances {
			return pc, fmt.Errorf("-i %d: a process has 0 to %d instances", f.instances, maxInstances)
		}
		pc.Instances = ptr.To(f.instances)
	}
	var err error
	if changed("memory") {
		if pc.MemoryMB, err = parseMegabytes("-m", f.memory); err != nil {
			return pc, err
		}
	}
	if changed("disk") {
		if pc.DiskMB, err = parseMegabytes("-k", f.disk); err != nil {
			return pc, err
		}
	}
	if !f.withHealthChecks {
		return pc, nil
	}
	if changed("health-check-type") {
		if !slices.Contains(healthCheckTypes, f.healthCheckType) {
			return pc, fmt.Errorf("-u %q: the health check type is port, http or process", f.healthCheckType)
		}
		pc.HealthCheck = ptr.To(cfv1alpha1.HealthCheckType(f.healthCheckType))
	}
	if changed("endpoint") {
		switch {
		case pc.HealthCheck == nil || *pc.HealthCheck != cfv1alpha1.HTTPHealthCheck:
			return pc, fmt.Errorf("--endpoint %q: only an http health check has an endpoint: give -u http with it", f.endpoint)
		case !strings.HasPrefix(f.endpoint, "/") || len(f.endpoint) > 256:
			return pc, fmt.Errorf("--endpoint %q: give a path that begins with /, of at most 256 characters", f.endpoint)
		}
		pc.Endpoint = ptr.To(f.endpoint)
	}
	return pc, nil
}

// byteQuantity is a size as the cf CLI takes it: a whole number with M, MB, G or GB, in any case.
var byteQuantity = regexp.MustCompile(`^([0-9]+)([MmGg])[Bb]?$`)

// parseMegabytes reads a size given to flag as MiB, within the CRD's limits.
func parseMegabytes(flag, value string) (*int64, error) {
	match := byteQuantity.FindStringSubmatch(value)
	if match == nil {
		return nil, fmt.Errorf("%s %q: give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G", flag, value)
	}
	n, err := strconv.ParseInt(match[1], 10, 64)
	if err == nil && strings.EqualFold(match[2], "G") {
		if n > maxMB {
			n = maxMB + 1 // too large either way; no overflow
		} else {
			n *= 1024
		}
	}
	if err != nil || n < minMB || n > maxMB {
		return nil, fmt.Errorf("%s %s: give 16M to 64G", flag, value)
	}
	return &n, nil
}

// formatMB is a size in MiB as the cf CLI shows it: 256M, 1G.
func formatMB(n int64) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dG", n/1024)
	}
	return fmt.Sprintf("%dM", n)
}

// describeScale is a process's scale: "2 instances, 256M memory, 1G disk".
func describeScale(spec cfv1alpha1.CFProcessSpec) string {
	noun := "instances"
	if spec.Instances == 1 {
		noun = "instance"
	}
	return fmt.Sprintf("%d %s, %s memory, %s disk", spec.Instances, noun, formatMB(spec.MemoryMB), formatMB(spec.DiskMB))
}

// describeHealthCheck is a process's health check: "port, 60s to start", "http GET /health, 60s
// to start", "process".
func describeHealthCheck(h cfv1alpha1.HealthCheck) string {
	switch h.Type {
	case cfv1alpha1.ProcessHealthCheck:
		return string(h.Type)
	case cfv1alpha1.HTTPHealthCheck:
		return fmt.Sprintf("http GET %s, %ds to start", h.Endpoint, h.TimeoutSeconds)
	}
	return fmt.Sprintf("%s, %ds to start", h.Type, h.TimeoutSeconds)
}

// processFlag names the fields of a process by the flags that set them.
func processFlag(field string) string {
	switch field {
	case "spec.instances":
		return "--instances"
	case "spec.memoryMB":
		return "--memory"
	case "spec.diskMB":
		return "--disk"
	case "spec.healthCheck.type":
		return "--health-check-type"
	case "spec.healthCheck.endpoint":
		return "--endpoint"
	}
	return field
}

// applyProcess gives the app's process of a type what change sets (cf.ChangeProcess), and
// returns the process and whether it changed.
func applyProcess(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, processType string, change cf.ProcessChange) (*cfv1alpha1.CFProcess, bool, error) {
	p, changed, err := cf.ChangeProcess(ctx, c, app, processType, change)
	switch {
	case cf.IsNotFound(err):
		return nil, false, fmt.Errorf("app %q has no %s process (cf-hnc makes the web process of every app)", app.Spec.DisplayName, processType)
	case err != nil:
		return nil, false, fmt.Errorf("changing the %s process of app %q: %w", processType, app.Spec.DisplayName, rejectedAs(err, processFlag))
	}
	return p, changed, nil
}
