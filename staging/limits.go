package staging

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BuildLimits bound every build pod that staging starts, so that one push can neither run for
// ever nor take a node's memory or disk from the others. cf-hnc states them on the app's kpack
// Image (spec.build) at staging; kpack v0.18.0 makes the timeout the build pod's
// activeDeadlineSeconds and gives the resources to every container of the pod, each lifecycle
// step and the completion container alike. There is no CPU limit: CPU is shared, not used up,
// and a throttled build only takes longer.
type BuildLimits struct {
	// Timeout ends a build pod that runs longer: the kubelet kills it and kpack fails the
	// build. kpack takes it in whole seconds; a fraction counts as a second more.
	Timeout time.Duration
	// Memory is each step's memory limit: the kernel kills a step that needs more (OOMKilled).
	Memory resource.Quantity
	// Disk is each step's ephemeral-storage limit. The steps run one after the other, so it is
	// also the pod's: the kubelet evicts a pod whose steps' writable layers and logs and its
	// emptyDir volumes (the source, the layers, the cache) use more.
	Disk resource.Quantity
	// MemoryRequest and DiskRequest are what the scheduler sets aside on a node for a build pod,
	// at most the limits.
	MemoryRequest resource.Quantity
	DiskRequest   resource.Quantity
}

// DefaultBuildLimits are the limits of a manager that is given none: 15 minutes, 1Gi of
// memory and 4Gi of disk, of which 128Mi and 512Mi are requested.
func DefaultBuildLimits() BuildLimits {
	return BuildLimits{
		Timeout:       15 * time.Minute,
		Memory:        resource.MustParse("1Gi"),
		Disk:          resource.MustParse("4Gi"),
		MemoryRequest: resource.MustParse("128Mi"),
		DiskRequest:   resource.MustParse("512Mi"),
	}
}

// Validate says what is wrong with the limits: a timeout under a second, a limit that is not
// positive, or a negative request.
func (l BuildLimits) Validate() error {
	var errs []error
	if l.Timeout < time.Second {
		errs = append(errs, fmt.Errorf("build timeout %s: must be at least 1s", l.Timeout))
	}
	for _, q := range []struct {
		name     string
		value    resource.Quantity
		positive bool
	}{
		{"build memory limit", l.Memory, true},
		{"build disk limit", l.Disk, true},
		{"build memory request", l.MemoryRequest, false},
		{"build disk request", l.DiskRequest, false},
	} {
		switch {
		case q.positive && q.value.Sign() <= 0:
			errs = append(errs, fmt.Errorf("%s %s: must be positive", q.name, q.value.String()))
		case q.value.Sign() < 0:
			errs = append(errs, fmt.Errorf("%s %s: must not be negative", q.name, q.value.String()))
		}
	}
	return errors.Join(errs...)
}

// withDefaults is the limits with every field that is zero set to its default.
func (l BuildLimits) withDefaults() BuildLimits {
	d := DefaultBuildLimits()
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	for _, q := range []struct{ value, fallback *resource.Quantity }{
		{&l.Memory, &d.Memory}, {&l.Disk, &d.Disk}, {&l.MemoryRequest, &d.MemoryRequest}, {&l.DiskRequest, &d.DiskRequest},
	} {
		if q.value.IsZero() {
			*q.value = *q.fallback
		}
	}
	return l
}

// timeoutSeconds is the timeout as kpack's Image takes it (spec.build.buildTimeout), in whole
// seconds, rounded up.
func (l BuildLimits) timeoutSeconds() *int64 {
	seconds := int64((l.Timeout + time.Second - 1) / time.Second)
	return &seconds
}

// resources are the resources of every container of a build pod; a request above its limit
// (a limit set below the default request) is lowered to the limit, which the apiserver would
// otherwise refuse.
func (l BuildLimits) resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Limits: corev1.ResourceList{
			corev1.ResourceMemory:           l.Memory.DeepCopy(),
			corev1.ResourceEphemeralStorage: l.Disk.DeepCopy(),
		},
		Requests: corev1.ResourceList{
			corev1.ResourceMemory:           atMost(l.MemoryRequest, l.Memory),
			corev1.ResourceEphemeralStorage: atMost(l.DiskRequest, l.Disk),
		},
	}
}

func atMost(q, limit resource.Quantity) resource.Quantity {
	if q.Cmp(limit) > 0 {
		return limit.DeepCopy()
	}
	return q.DeepCopy()
}
