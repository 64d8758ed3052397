package buildconfig

import (
	"crypto/sha256"
	"encoding/hex"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
)

// maxClusterBuilderName keeps kpack's tag for a ClusterBuilder's image,
// "clusterbuilder-<name>", within the 128 characters an image tag may have.
const maxClusterBuilderName = 100

// ClusterBuilderName is the name of the kpack ClusterBuilder that cf-hnc makes from a default
// Builder placed in an org or the root namespace: "<namespace>.<name>", or, for a long name,
// "<namespace>.<hash>". Spaces below build with it, so that a stack update rebuilds one builder
// image per placed Builder, not one per space.
func ClusterBuilderName(namespace, builder string) string {
	name := namespace + "." + builder
	if len(name) <= maxClusterBuilderName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return namespace + "." + hex.EncodeToString(sum[:])[:16]
}

// Ready says whether kpack reports a Builder or ClusterBuilder Ready for its current
// generation: a Ready condition of an older generation describes the old spec.
func Ready(status *kpackv1alpha2.BuilderStatus, generation int64) bool {
	return status.GetCondition(corev1alpha1.ConditionReady).IsTrue() && status.ObservedGeneration == generation
}

// notReadyReason is what kpack says about a Builder that is not ready.
func notReadyReason(status *kpackv1alpha2.BuilderStatus, generation int64) string {
	c := status.GetCondition(corev1alpha1.ConditionReady)
	switch {
	case c != nil && c.IsTrue() && status.ObservedGeneration != generation:
		return "kpack has not built its current spec yet"
	case c != nil && c.Message != "":
		return c.Message
	}
	return "it has not been reconciled yet"
}
