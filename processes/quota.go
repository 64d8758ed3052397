package processes

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// instanceNeeds is what one more instance of p counts against a namespace's ResourceQuotas,
// under each name a quota may give it (workload.go gives requests and limits alike).
func instanceNeeds(p *cfv1alpha1.CFProcess) corev1.ResourceList {
	memory, disk, one := megabytes(p.Spec.MemoryMB), megabytes(p.Spec.DiskMB), resource.MustParse("1")
	return corev1.ResourceList{
		corev1.ResourcePods:                     one,
		"count/pods":                            one,
		corev1.ResourceMemory:                   memory,
		corev1.ResourceRequestsMemory:           memory,
		corev1.ResourceLimitsMemory:             memory,
		corev1.ResourceEphemeralStorage:         disk,
		corev1.ResourceRequestsEphemeralStorage: disk,
		corev1.ResourceLimitsEphemeralStorage:   disk,
	}
}

// quotaShortfall says which ResourceQuota leaves no room for one more instance needing need,
// and by how much; "" when each has room. A quota whose usage the apiserver has not counted yet
// holds nothing back.
func quotaShortfall(quotas []corev1.ResourceQuota, need corev1.ResourceList) string {
	for _, q := range quotas {
		names := make([]corev1.ResourceName, 0, len(q.Status.Hard))
		for name := range q.Status.Hard {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			wanted, needed := need[name]
			used, counted := q.Status.Used[name]
			if !needed || !counted {
				continue
			}
			hard := q.Status.Hard[name]
			after := used.DeepCopy()
			after.Add(wanted)
			if after.Cmp(hard) > 0 {
				return fmt.Sprintf("ResourceQuota %s allows %s %s, %s is used, and an instance needs %s",
					q.Name, name, hard.String(), used.String(), wanted.String())
			}
		}
	}
	return ""
}
