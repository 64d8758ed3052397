package standinkubelet

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("parseArgs", func() {
	DescribeTable("splits flags from positional arguments like Go's flag package",
		func(args []string, flags map[string][]string, positional []string) {
			gotFlags, gotPositional := parseArgs(args)
			Expect(gotFlags).To(Equal(flags))
			Expect(gotPositional).To(Equal(positional))
		},
		Entry("nothing", nil, map[string][]string{}, nil),
		Entry("-name=value, repeated",
			[]string{"-dockerconfig=a", "-dockerconfig=b", "-basic-docker=c=reg.test"},
			map[string][]string{"dockerconfig": {"a", "b"}, "basic-docker": {"c=reg.test"}}, nil),
		Entry("--name value, then positional",
			[]string{"--run-image", "run@sha256:1", "--report", "/r.toml", "tag:1", "tag:2"},
			map[string][]string{"run-image": {"run@sha256:1"}, "report": {"/r.toml"}}, []string{"tag:1", "tag:2"}),
		Entry("flags stop at the first positional argument",
			[]string{"tag", "-layers=/layers"}, map[string][]string{}, []string{"tag", "-layers=/layers"}),
		Entry("-- ends the flags",
			[]string{"-a=1", "--", "-tag"}, map[string][]string{"a": {"1"}}, []string{"-tag"}),
	)
})

var _ = Describe("planFor", func() {
	const (
		builderImage = "127.0.0.1:5000/builder@sha256:b1"
		runImage     = "127.0.0.1:5000/run@sha256:r1"
		tag          = "127.0.0.1:5000/apps/app"
		source       = "127.0.0.1:5000/sources/app@sha256:s1"
	)
	secrets := []corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "push"}, Type: corev1.SecretTypeDockerConfigJson},
		{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Type: corev1.SecretTypeDockercfg},
		{ObjectMeta: metav1.ObjectMeta{Name: "basic", Annotations: map[string]string{kpackv1alpha2.DOCKERSecretAnnotationPrefix: "127.0.0.1:5000"}}, Type: corev1.SecretTypeBasicAuth},
		{ObjectMeta: metav1.ObjectMeta{Name: "git", Annotations: map[string]string{kpackv1alpha2.GITSecretAnnotationPrefix: "https://git.test"}}, Type: corev1.SecretTypeBasicAuth},
	}

	It("reads what a build pod's steps need from the pod kpack creates", func() {
		build := kpackBuild("space", tag, source)
		build.Spec.Builder.Image = builderImage
		build.Spec.Cache = &kpackv1alpha2.BuildCacheConfig{Registry: &kpackv1alpha2.RegistryCache{Tag: tag + "-cache"}}
		build.Spec.DefaultProcess = "worker"
		build.Spec.Source.SubPath = "api"

		p, err := planFor(podFor(build, builderImage, runImage, secrets...))

		Expect(err).NotTo(HaveOccurred())
		Expect(p.kind).To(Equal(buildPod))
		Expect(p.namespace).To(Equal("space"))
		Expect(p.labels).To(HaveKeyWithValue(kpackv1alpha2.ImageLabel, "app"))
		Expect(p.tags).To(Equal([]string{tag, tag + ":b1"}))
		Expect(p.runImage).To(Equal(runImage))
		Expect(p.builderImage).To(Equal(builderImage))
		Expect(p.source).To(Equal(source))
		Expect(p.sourceSubPath).To(Equal("api"))
		Expect(p.cacheImage).To(Equal(tag + "-cache"))
		Expect(p.cacheTag).To(Equal(tag + "-cache"))
		Expect(p.defaultProcess).To(Equal("worker"))
		Expect(p.platformAPI).To(Equal("0.9"))
		Expect(p.secrets).To(Equal(secretRefs{
			basicAuth:      []basicAuthRef{{secret: "basic", registry: "127.0.0.1:5000"}},
			dockerConfigs:  []string{"legacy", "push"},
			imagePull:      []string{"builder-pull"},
			sourcePull:     "source-pull",
			serviceAccount: "builder",
		}))
	})

	It("reads a rebase pod, for a Build whose reason is exactly STACK", func() {
		last := tag + "@sha256:a1"
		p, err := planFor(podFor(asRebase(kpackBuild("space", tag, source), last), builderImage, runImage, secrets...))

		Expect(err).NotTo(HaveOccurred())
		Expect(p.kind).To(Equal(rebasePod))
		Expect(p.namespace).To(Equal("space"))
		Expect(p.labels).To(HaveKeyWithValue(kpackv1alpha2.ImageLabel, "app"))
		Expect(p.tags).To(Equal([]string{tag, tag + ":b1"}))
		Expect(p.runImage).To(Equal(runImage))
		Expect(p.lastBuiltImage).To(Equal(last))
		Expect(p.secrets.dockerConfigs).To(ConsistOf("legacy", "push"))
		Expect(p.secrets.imagePull).To(Equal([]string{"builder-pull"}))
	})

	It("reads a build pod for a Build with another reason and a last build", func() {
		build := asRebase(kpackBuild("space", tag, source), tag+"@sha256:a1")
		build.Annotations[kpackv1alpha2.BuildReasonAnnotation] = "STACK,BUILDPACK"

		p, err := planFor(podFor(build, builderImage, runImage))

		Expect(err).NotTo(HaveOccurred())
		Expect(p.kind).To(Equal(buildPod))
	})

	It("refuses kpack's injected-sidecar layout", func() {
		build := kpackBuild("space", tag, source)
		pod, err := build.BuildPod(kpackv1alpha2.BuildPodImages{}, kpackv1alpha2.BuildContext{
			BuildPodBuilderConfig:  kpackv1alpha2.BuildPodBuilderConfig{StackID: testStack, RunImage: runImage, PlatformAPIs: []string{"0.9"}, ResolvedImage: builderImage},
			InjectedSidecarSupport: true,
		})
		Expect(err).NotTo(HaveOccurred())

		_, err = planFor(pod)

		Expect(err).To(MatchError(ContainSubstring("injected sidecar")))
	})

	It("recognises kpack's build pods by their Build owner and label", func() {
		pod := podFor(kpackBuild("space", tag, source), builderImage, runImage)
		Expect(isBuildPod(pod)).To(BeTrue())

		unlabelled := pod.DeepCopy()
		delete(unlabelled.Labels, kpackv1alpha2.BuildLabel)
		Expect(isBuildPod(unlabelled)).To(BeFalse())

		foreign := pod.DeepCopy()
		foreign.OwnerReferences[0].APIVersion = "batch/v1"
		Expect(isBuildPod(foreign)).To(BeFalse())
	})
})
