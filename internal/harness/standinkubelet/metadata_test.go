package standinkubelet

import (
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
)

var _ = Describe("kpack's build metadata", func() {
	It("is JSON with kpack's field names, gzipped, in standard base64", func() {
		message, err := kpackBuildMetadata{
			BuildpackMetadata: kpackcorev1alpha1.BuildpackMetadataList{{Id: "cf/mri", Version: "1.1.0", Homepage: "https://mri.test"}},
			LatestCacheImage:  "reg/cache@sha256:c",
			LatestImage:       "reg/app@sha256:a",
			StackID:           testStack,
			StackRunImage:     "reg/run@sha256:r",
			LifecycleVersion:  testLifecycleVersion,
		}.encode()

		Expect(err).NotTo(HaveOccurred())
		Expect(decodeCompletion(message)).To(Equal(map[string]any{
			"buildpackMetadata": []any{map[string]any{"id": "cf/mri", "version": "1.1.0", "homepage": "https://mri.test"}},
			"latestCacheImage":  "reg/cache@sha256:c",
			"latestImage":       "reg/app@sha256:a",
			"stackID":           testStack,
			"stackRunImage":     "reg/run@sha256:r",
			"lifecycleVersion":  testLifecycleVersion,
		}))
	})

	It("must fit in a termination message", func() {
		many := make(kpackcorev1alpha1.BuildpackMetadataList, 0, 500)
		for i := range 500 {
			// Hashes do not compress: 500 of them do not fit.
			id, _, err := v1.SHA256(strings.NewReader(strconv.Itoa(i)))
			Expect(err).NotTo(HaveOccurred())
			many = append(many, kpackcorev1alpha1.BuildpackMetadata{Id: id.Hex})
		}
		_, err := kpackBuildMetadata{BuildpackMetadata: many}.encode()
		Expect(err).To(MatchError(ContainSubstring("termination message")))
	})
})
