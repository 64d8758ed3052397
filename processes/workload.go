package processes

import (
	"encoding/json"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

const (
	// appPort is the port every instance listens on, $PORT, as Cloud Foundry gives it.
	appPort = 8080
	// containerName is the instance's one container.
	containerName = "app"
	// DropletAnnotation is on an instance's pod: the CFBuild whose droplet it runs.
	DropletAnnotation = "workloads.cloudfoundry.org/droplet"
	// podIndexLabel is the StatefulSet controller's label of a pod's ordinal: CF's instance
	// index.
	podIndexLabel = appsv1.PodIndexLabel
	// launcher is the CNB launcher in every droplet: it runs a command with the buildpacks'
	// environment.
	launcher = "/cnb/lifecycle/launcher"
	// processDir holds a launcher link per process type of the droplet.
	processDir = "/cnb/process/"
	// gracePeriod is how long an instance has to stop, as Cloud Foundry gives it.
	gracePeriod = 10
)

// runContext is what an instance's environment says about where it runs.
type runContext struct {
	app                         *cfv1alpha1.CFApp
	droplet                     *cfv1alpha1.CFBuild
	spaceName, orgGUID, orgName string
	spaceGUID                   string
}

// desiredStatefulSet is the workload of a process: replicas instances of the droplet's process
// type, replaced one at a time when the droplet or the process changes (a restart or a start
// through the CF API is a change of the process's annotation, which the pods carry), with the
// Parallel policy so that one crashed instance neither holds back the others' start nor a new
// droplet that fixes it.
func desiredStatefulSet(p *cfv1alpha1.CFProcess, rc runContext, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{
		cfv1alpha1.AppLabel:         p.Spec.AppRef.Name,
		cfv1alpha1.ProcessLabel:     p.Name,
		cfv1alpha1.ProcessTypeLabel: p.Spec.ProcessType,
	}
	annotations := map[string]string{DropletAnnotation: rc.droplet.Name}
	for _, key := range []string{cfv1alpha1.RestartedAtAnnotation, cfv1alpha1.AppStartedAtAnnotation} {
		if at := p.Annotations[key]; at != "" {
			annotations[key] = at
		}
	}
	return &appsv1.StatefulSet{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       p.Namespace,
			Name:            p.Name,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, cfv1alpha1.GroupVersion.WithKind("CFProcess"))},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{cfv1alpha1.ProcessLabel: p.Name}},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			RevisionHistoryLimit: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       podSpec(p, rc),
			},
		},
	}
}

// podSpec runs one instance: the droplet as the CNB user it was built for, with no API token,
// no privilege, and the process's memory and disk as its limits.
func podSpec(p *cfv1alpha1.CFProcess, rc runContext) corev1.PodSpec {
	memory := megabytes(p.Spec.MemoryMB)
	disk := megabytes(p.Spec.DiskMB)
	registry := rc.droplet.Status.Droplet.Registry
	return corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](gracePeriod),
		ImagePullSecrets:              registry.ImagePullSecrets,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:    containerName,
			Image:   registry.Image,
			Command: command(p),
			Env:     environment(p, rc),
			Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: appPort, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: memory, corev1.ResourceEphemeralStorage: disk},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: memory, corev1.ResourceEphemeralStorage: disk},
			},
			StartupProbe:   probe(p.Spec.HealthCheck, 2, startupFailures(p.Spec.HealthCheck)),
			ReadinessProbe: probe(p.Spec.HealthCheck, 5, 1),
			LivenessProbe:  probe(p.Spec.HealthCheck, 10, 3),
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				RunAsNonRoot:             ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		}},
	}
}

// command runs the droplet's process type, or the process's own command through the launcher
// and the stack's /bin/sh, as Cloud Foundry runs a start command. "--" makes the launcher
// execute it directly: without it, the launcher runs a command through bash, which a stack
// need not have.
func command(p *cfv1alpha1.CFProcess) []string {
	if p.Spec.Command == "" {
		return []string{processDir + p.Spec.ProcessType}
	}
	return []string{launcher, "--", "/bin/sh", "-c", p.Spec.Command}
}

// environment is Cloud Foundry's environment of an instance: its port, its index, and
// VCAP_APPLICATION.
func environment(p *cfv1alpha1.CFProcess, rc runContext) []corev1.EnvVar {
	port := strconv.Itoa(appPort)
	return []corev1.EnvVar{
		{Name: "PORT", Value: port},
		{Name: "VCAP_APP_PORT", Value: port},
		{Name: "VCAP_APP_HOST", Value: "0.0.0.0"},
		{Name: "MEMORY_LIMIT", Value: strconv.FormatInt(p.Spec.MemoryMB, 10) + "m"},
		{Name: "VCAP_APPLICATION", Value: vcapApplication(p, rc)},
		{Name: "CF_INSTANCE_INDEX", ValueFrom: fieldRef("metadata.labels['" + podIndexLabel + "']")},
		{Name: "CF_INSTANCE_GUID", ValueFrom: fieldRef("metadata.uid")},
		{Name: "CF_INSTANCE_IP", ValueFrom: fieldRef("status.podIP")},
		{Name: "CF_INSTANCE_INTERNAL_IP", ValueFrom: fieldRef("status.podIP")},
		{Name: "CF_INSTANCE_PORT", Value: port},
	}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

// vcapApplication is the VCAP_APPLICATION document of Cloud Foundry, with what cf-hnc knows.
func vcapApplication(p *cfv1alpha1.CFProcess, rc runContext) string {
	doc := map[string]any{
		"application_id":    rc.app.Name,
		"application_name":  rc.app.Spec.DisplayName,
		"name":              rc.app.Spec.DisplayName,
		"application_uris":  []string{},
		"uris":              []string{},
		"space_id":          rc.spaceGUID,
		"space_name":        rc.spaceName,
		"organization_id":   rc.orgGUID,
		"organization_name": rc.orgName,
		"process_id":        p.Name,
		"process_type":      p.Spec.ProcessType,
		"limits":            map[string]int64{"mem": p.Spec.MemoryMB, "disk": p.Spec.DiskMB},
	}
	// A map of strings, slices and numbers always marshals.
	out, _ := json.Marshal(doc)
	return string(out)
}

// probe is the health check as a kubelet probe, every period seconds, failing after failures
// misses in a row; a process check has none.
func probe(h cfv1alpha1.HealthCheck, period, failures int32) *corev1.Probe {
	handler := corev1.ProbeHandler{}
	switch h.Type {
	case cfv1alpha1.ProcessHealthCheck:
		return nil
	case cfv1alpha1.HTTPHealthCheck:
		handler.HTTPGet = &corev1.HTTPGetAction{Path: h.Endpoint, Port: intstr.FromInt32(appPort)}
	default:
		handler.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(appPort)}
	}
	return &corev1.Probe{ProbeHandler: handler, PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 1}
}

// startupFailures is how many misses, two seconds apart, the first check may take: the
// health check's timeout.
func startupFailures(h cfv1alpha1.HealthCheck) int32 {
	return max(1, (h.TimeoutSeconds+1)/2)
}

// megabytes is n MiB, in its canonical form ("1Gi" for 1024), which the apiserver keeps, so
// that an applied StatefulSet compares equal to the one read back.
func megabytes(n int64) resource.Quantity {
	return *resource.NewQuantity(n*1024*1024, resource.BinarySI)
}
