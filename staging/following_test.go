package staging

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("the app's Image", func() {
	It("stages the package below the space's droplet repository, with the build's name in the environment", func() {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: "app-guid", UID: "uid"}}
		build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: "build-guid"}}
		pkg := &cfv1alpha1.CFPackage{Spec: cfv1alpha1.CFPackageSpec{Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{
			Image: "registry.local/org-a/packages/p", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}}}}}}
		image := desiredImage(app, build, pkg, corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: "cf.default"}, space, DefaultBuildLimits())
		Expect(image.Name).To(Equal("app-guid"))
		Expect(image.OwnerReferences).To(ConsistOf(HaveField("UID", app.UID)))
		Expect(image.Spec.Tag).To(Equal("registry.local/org-a/app-guid"))
		Expect(image.Spec.ServiceAccountName).To(Equal("cf-build-org"))
		Expect(image.Spec.Builder).To(Equal(corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: "cf.default"}))
		Expect(image.Spec.Source.Registry.Image).To(Equal("registry.local/org-a/packages/p"))
		Expect(image.Spec.Source.Registry.ImagePullSecrets).To(Equal(pkg.Spec.Source.Registry.ImagePullSecrets))
		Expect(image.Spec.ImageTaggingStrategy).To(Equal(corev1alpha1.None))
		Expect(*image.Spec.SuccessBuildHistoryLimit).To(BeNumerically(">", 0))
		Expect(*image.Spec.FailedBuildHistoryLimit).To(BeNumerically(">", 0))

		kb := &kpackv1alpha2.Build{Spec: kpackv1alpha2.BuildSpec{Env: image.Spec.Build.Env}}
		Expect(StagedBuild(kb)).To(Equal("build-guid"))
	})
})

var _ = Describe("following a kpack Build", func() {
	kpackBuild := func(status corev1.ConditionStatus, reason, message string) *kpackv1alpha2.Build {
		kb := &kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Name: "app-build-1",
			Annotations: map[string]string{kpackv1alpha2.BuilderNameAnnotation: "default"}}}
		kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: status, Reason: reason, Message: message}}
		return kb
	}
	following := func(kb *kpackv1alpha2.Build, processes ...cfv1alpha1.ProcessType) stagingInputs {
		return stagingInputs{
			build:      &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			space:      &cfv1alpha1.CFSpace{Status: cfv1alpha1.CFSpaceStatus{Build: space}},
			following:  "app-build-1",
			kpackBuild: kb,
			processes:  processes,
		}
	}
	condition := func(p stagingPlan, t string) metav1.Condition {
		for _, c := range p.conditions {
			if c.Type == t {
				return c
			}
		}
		return metav1.Condition{}
	}

	It("is staging while kpack builds", func() {
		p := planStaging(following(kpackBuild(corev1.ConditionUnknown, "", "")))
		Expect(condition(p, cfv1alpha1.StagingCondition)).To(HaveField("Status", metav1.ConditionTrue))
		Expect(condition(p, cfv1alpha1.SucceededCondition)).To(HaveField("Status", metav1.ConditionUnknown))
		Expect(p.kpackBuild).To(Equal("app-build-1"))
		Expect(p.builder).To(Equal("default"))
		Expect(p.droplet).To(BeNil())
	})

	It("names the failed step, its exit code and the end of its log, without terminal escapes", func() {
		in := following(kpackBuild(corev1.ConditionFalse, "Failed", "Error: ... For more info use `kubectl logs ...`"))
		in.failedStep = failedStepOf(&corev1.Pod{Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "prepare", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "fine"}}},
				{Name: "build", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 51,
					Message: "line 1\nline 2\nline 3\n\nline 4\nline 5\nProcfile:1: malformed line\n\x1b[31;1mERROR: \x1b[0mfailed to build: exit status 1\n"}}},
				{Name: "export", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
			},
		}})
		p := planStaging(in)
		Expect(condition(p, cfv1alpha1.SucceededCondition)).To(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", "Failed"),
			HaveField("Message", "kpack build app-build-1 failed in step build (exit code 51): "+
				"line 2; line 3; line 4; line 5; Procfile:1: malformed line; ERROR: failed to build: exit status 1")))
	})

	It("carries kpack's message when no step failed (the pod is gone, or was evicted)", func() {
		in := following(kpackBuild(corev1.ConditionFalse, "Failed", "pod evicted"))
		in.failedStep = failedStepOf(&corev1.Pod{})
		Expect(in.failedStep).To(BeNil())
		Expect(condition(planStaging(in), cfv1alpha1.SucceededCondition)).To(
			HaveField("Message", "kpack build app-build-1 failed: pod evicted"))
	})

	It("says that a build's pod waits for a node, with the scheduler's reason", func() {
		in := following(kpackBuild(corev1.ConditionUnknown, "", ""))
		in.unschedulable = "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }."
		Expect(condition(planStaging(in), cfv1alpha1.SucceededCondition)).To(And(
			HaveField("Status", metav1.ConditionUnknown),
			HaveField("Message", "kpack build app-build-1 waits for a node: "+in.unschedulable)))
	})

	It("says what a running build waits for, such as an image that cannot be pulled", func() {
		kb := kpackBuild(corev1.ConditionUnknown, "ErrImagePull", "failed to pull image \"registry/builder\": not found")
		kb.Status.StepsCompleted = []string{"prepare"}
		Expect(condition(planStaging(following(kb)), cfv1alpha1.StagingCondition)).To(HaveField("Message",
			`kpack build app-build-1 is running; steps completed: prepare; ErrImagePull: failed to pull image "registry/builder": not found`))
	})

	It("fails a build whose kpack Build is gone", func() {
		in := following(nil)
		p := planStaging(in)
		Expect(condition(p, cfv1alpha1.SucceededCondition)).To(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.KpackBuildMissingReason)))
	})

	It("makes a droplet of a succeeded build", func() {
		kb := kpackBuild(corev1.ConditionTrue, "", "")
		kb.Status.LatestImage = "registry.local/org-a/app@sha256:1"
		kb.Status.Stack = corev1alpha1.BuildStack{ID: "io.buildpacks.stacks.jammy", RunImage: "registry.local/run@sha256:2"}
		kb.Status.BuildMetadata = corev1alpha1.BuildpackMetadataList{{Id: "paketo-buildpacks/go", Version: "1.0.0"}}
		p := planStaging(following(kb, cfv1alpha1.ProcessType{Type: "web", Command: "./app"}))
		Expect(condition(p, cfv1alpha1.SucceededCondition)).To(HaveField("Status", metav1.ConditionTrue))
		Expect(p.droplet).To(Equal(&cfv1alpha1.BuildDropletStatus{
			Registry:     cfv1alpha1.Registry{Image: "registry.local/org-a/app@sha256:1", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}}},
			Stack:        "io.buildpacks.stacks.jammy",
			RunImage:     "registry.local/run@sha256:2",
			Buildpacks:   []cfv1alpha1.BuildpackVersion{{ID: "paketo-buildpacks/go", Version: "1.0.0"}},
			ProcessTypes: []cfv1alpha1.ProcessType{{Type: "web", Command: "./app"}},
		}))
	})
})
