package staging

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

var _ = Describe("the cache of build pods", func() {
	It("keeps why the scheduler cannot place a build pod, and no other condition", func() {
		pod := &corev1.Pod{}
		noNode := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }."}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, noNode}
		obj, err := TrimBuildPod(pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.Pod).Status.Conditions).To(ConsistOf(noNode))
	})

})
