package policies_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
)

// droplet is an image as a CFBuild's status names it: below the space's repository, pinned by
// digest.
func droplet(space, app string) string {
	return "registry.example.org/org/" + space + "/" + app + "@sha256:" + strings.Repeat("d", 64)
}

// instances is a StatefulSet as processes/workload.go (desiredStatefulSet, podSpec) makes it
// for an app's web process of 1 GiB with a port health check.
func instances(space, process string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{
		cfv1alpha1.AppLabel:         "app",
		cfv1alpha1.ProcessLabel:     process,
		cfv1alpha1.ProcessTypeLabel: "web",
	}
	annotations := map[string]string{
		"workloads.cloudfoundry.org/droplet": "build",
		cfv1alpha1.RestartedAtAnnotation:     "2026-12-08T00:00:00Z",
		cfv1alpha1.AppStartedAtAnnotation:    "2026-12-08T00:00:00Z",
	}
	memory := resource.MustParse("1Gi")
	resources := corev1.ResourceList{corev1.ResourceMemory: memory, corev1.ResourceEphemeralStorage: memory}
	port := func() corev1.ProbeHandler {
		return corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}
	}
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: process, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{cfv1alpha1.ProcessLabel: process}},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			RevisionHistoryLimit: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "cf-registry-org"}},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "app",
						Image:   droplet(space, "app"),
						Command: []string{"/cnb/lifecycle/launcher", "--", "/bin/sh", "-c", "./serve"},
						Env: []corev1.EnvVar{
							{Name: "PORT", Value: "8080"},
							{Name: "VCAP_APPLICATION", Value: `{"application_id":"app"}`},
							{Name: "CF_INSTANCE_INDEX", ValueFrom: fieldRef("metadata.labels['" + appsv1.PodIndexLabel + "']")},
							{Name: "CF_INSTANCE_IP", ValueFrom: fieldRef("status.podIP")},
						},
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						Resources:      corev1.ResourceRequirements{Requests: resources, Limits: resources},
						StartupProbe:   &corev1.Probe{ProbeHandler: port(), PeriodSeconds: 2, FailureThreshold: 30, TimeoutSeconds: 1},
						ReadinessProbe: &corev1.Probe{ProbeHandler: port(), PeriodSeconds: 5, FailureThreshold: 1, TimeoutSeconds: 1},
						LivenessProbe:  &corev1.Probe{ProbeHandler: port(), PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 1},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
				},
			},
		},
	}
}

var _ = Describe("The StatefulSets cf-hnc's manager writes (N5)", Ordered, ContinueOnFailure, func() {
	var space string

	BeforeAll(func(ctx SpecContext) {
		space = createSpace(ctx, createOrg(ctx))
	})

	It("are applied, scaled to zero and moved to a new droplet as the process reconciler does, and their pods run within the space's quota", func(ctx SpecContext) {
		m := manager()
		desired := instances(space, name("web"), 1)
		_, err := apply.Object(ctx, m, nil, desired, client.FieldOwner("cf-hnc-processes"))
		Expect(err).NotTo(HaveOccurred())

		By("the StatefulSet controller making the instance, which requests CPU in proportion to its memory")
		pod := &corev1.Pod{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: desired.Name + "-0"}, pod)
		}).Should(Succeed())
		Expect(pod.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("125m"), "1 CPU per 8 GiB, of 1 GiB")

		By("a new droplet")
		current := &appsv1.StatefulSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(desired), current)).To(Succeed())
		next := instances(space, desired.Name, 1)
		next.Spec.Template.Spec.Containers[0].Image = droplet(space, "app2")
		_, err = apply.Object(ctx, m, current, next, client.FieldOwner("cf-hnc-processes"))
		Expect(err).NotTo(HaveOccurred())

		By("scaling to zero as scaleToZero does, with a merge patch")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(desired), current)).To(Succeed())
		patch := client.MergeFrom(current.DeepCopy())
		current.Spec.Replicas = ptr.To[int32](0)
		Expect(m.Patch(ctx, current, patch)).To(Succeed())
	})

	It("are refused outside the CF tree by the manager's confinement, which says so", func(ctx SpecContext) {
		outside := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name("outside")}}
		Expect(k8s.Create(ctx, outside)).To(Succeed())
		privileged := instances(outside.Name, name("web"), 0)
		privileged.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		privileged.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		Expect(manager().Create(ctx, privileged)).To(refusedWith("cf-hnc writes only in the CF tree"))
	})

	DescribeTable("refuse any other pod template, naming what cf-hnc does not make, at creation and as a change",
		func(ctx SpecContext, namespace func() string, change func(*appsv1.StatefulSet), message string) {
			m := manager()
			ns := space
			if namespace != nil {
				ns = namespace()
			}
			valid := instances(ns, name("web"), 0)
			Expect(m.Create(ctx, valid)).To(Succeed(), "the template workload.go makes")
			bad := instances(ns, name("web"), 0)
			change(bad)
			Expect(m.Create(ctx, bad)).To(refusedWith(message))
			if len(bad.Spec.VolumeClaimTemplates) > 0 {
				return // immutable: the apiserver refuses any change of them itself
			}
			changed := valid.DeepCopy()
			change(changed)
			Expect(m.Patch(ctx, changed, client.MergeFrom(valid))).To(refusedWith(message))
		},
		Entry("privileged with a hostPath of / in the root namespace (the review's exploit)", func() string { return root },
			func(s *appsv1.StatefulSet) {
				pod := &s.Spec.Template.Spec
				pod.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
				pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
				pod.Containers[0].SecurityContext.Privileged = ptr.To(true)
				pod.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
			}, "its pod template may not set volumes"),
		Entry("privileged", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
			s.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, "the container runs unprivileged"),
		Entry("a capability added", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}, "the container runs unprivileged"),
		Entry("privilege escalation", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, "the container runs unprivileged"),
		Entry("root", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
			s.Spec.Template.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
		}, "the pod security context is the restricted one"),
		Entry("the host's network", nil, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.HostNetwork = true },
			"may not set hostNetwork"),
		Entry("the host's process namespace", nil, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.HostPID = true },
			"may not set hostPID"),
		Entry("a host port", nil, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Ports[0].HostPort = 8080 },
			"no host ports"),
		Entry("the build ServiceAccount, and its API token", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.ServiceAccountName = "cf-build-org"
			s.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
		}, "serviceAccountName"),
		Entry("an API token", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
		}, "mounts no API token"),
		Entry("an image by a tag, which anybody who may push there moves", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = "registry.example.org/attacker/image:latest"
		}, "pinned by digest"),
		Entry("a Secret in the environment", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Env = append(s.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "TOKEN",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cf-registry-org"}, Key: ".dockerconfigjson"}}})
		}, "no environment from Secrets"),
		Entry("a sidecar", nil, func(s *appsv1.StatefulSet) {
			sidecar := s.Spec.Template.Spec.Containers[0]
			sidecar.Name = "sidecar"
			s.Spec.Template.Spec.Containers = append(s.Spec.Template.Spec.Containers, sidecar)
		}, "one container per instance"),
		Entry("an init container", nil, func(s *appsv1.StatefulSet) {
			app := s.Spec.Template.Spec.Containers[0]
			s.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: app.Image, Command: []string{"/bin/true"},
				Resources: app.Resources, SecurityContext: app.SecurityContext}}
		}, "may not set initContainers"),
		Entry("a lifecycle hook", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "true"}}}}
		}, "without lifecycle"),
		Entry("a volume claim", nil, func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Ti")}}}}}
		}, "no volume claims"),
		Entry("a health check that runs a command", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].LivenessProbe.ProbeHandler = corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "true"}}}
		}, "health checks only on the instance's own port"),
		Entry("a health check that the kubelet sends to another host", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].ReadinessProbe.ProbeHandler = corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/", Port: intstr.FromInt32(80)}}
		}, "health checks only on the instance's own port"),
		Entry("a node of its choice", nil, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.NodeName = "control-plane" },
			"may not set nodeName"),
		Entry("a toleration of the control plane's taint", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}
		}, "may not set tolerations"),
		Entry("an unconfined AppArmor profile by annotation", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations["container.apparmor.security.beta.kubernetes.io/app"] = "unconfined"
		}, "carry only cf-hnc's own labels and annotations"),
		Entry("the label of kpack's build pods, which holds rebuild slots", nil, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Labels["kpack.io/build"] = "fake"
		}, "carry only cf-hnc's own labels and annotations"),
	)
})
