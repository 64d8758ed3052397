package cftest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Restricted gives pod, and each of its containers, the security context of the restricted Pod
// Security Standard, which every namespace of the CF tree enforces (config/policies/
// pod-security.yaml): as a non-root user (1000 unless the pod names one), the runtime's default
// seccomp profile, no privilege escalation, no capability. It returns pod.
func Restricted(pod *corev1.Pod) *corev1.Pod {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	s := pod.Spec.SecurityContext
	s.RunAsNonRoot = ptr.To(true)
	if s.RunAsUser == nil {
		s.RunAsUser = ptr.To[int64](1000)
	}
	s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			containers[i].SecurityContext = &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}
		}
	}
	return pod
}
