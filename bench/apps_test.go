package main

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("whether a process runs a droplet (pure logic)", func() {
	const image = "registry/orgs/acme/droplets/app@sha256:rebased"
	droplet := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: "app-rebase-1"},
		Status: cfv1alpha1.CFBuildStatus{Droplet: &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: image}}}}
	process := func(status metav1.ConditionStatus, observed int64, on string, images ...string) *cfv1alpha1.CFProcess {
		p := &cfv1alpha1.CFProcess{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: cfv1alpha1.CFProcessSpec{Instances: 2},
			Status: cfv1alpha1.CFProcessStatus{Droplet: on, Conditions: []metav1.Condition{
				{Type: cfv1alpha1.RunningCondition, Status: status, ObservedGeneration: observed}}}}
		for i, image := range images {
			p.Status.Instances = append(p.Status.Instances, cfv1alpha1.InstanceStatus{Index: int32(i), State: cfv1alpha1.InstanceRunning, Image: image})
		}
		return p
	}

	DescribeTable("Running True for its generation, on the droplet, each instance on its image",
		func(p *cfv1alpha1.CFProcess, d *cfv1alpha1.CFBuild, want bool) {
			Expect(runsDroplet(p, d)).To(Equal(want))
		},
		Entry("every instance on the rebased droplet", process(metav1.ConditionTrue, 2, droplet.Name, image, image), droplet, true),
		Entry("an instance still on the droplet before the fix", process(metav1.ConditionTrue, 2, droplet.Name, image, "registry/app@sha256:old"), droplet, false),
		Entry("fewer instances than it wants", process(metav1.ConditionTrue, 2, droplet.Name, image), droplet, false),
		Entry("running the app's previous droplet", process(metav1.ConditionTrue, 2, "app-build-1", image, image), droplet, false),
		Entry("Running False", process(metav1.ConditionFalse, 2, droplet.Name, image, image), droplet, false),
		Entry("Running True for an older generation", process(metav1.ConditionTrue, 1, droplet.Name, image, image), droplet, false),
		Entry("no Running condition yet", &cfv1alpha1.CFProcess{}, droplet, false),
		Entry("a droplet that has no image", process(metav1.ConditionTrue, 2, droplet.Name, image, image),
			&cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: droplet.Name}}, false),
	)
})
