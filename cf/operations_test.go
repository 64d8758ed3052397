package cf_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

func unique(name string) string { return name + "-" + string(uuid.NewUUID())[:8] }

// developedSpace is a space of an org of its own, and a user who develops in it, acting with
// their own credentials.
func developedSpace(ctx context.Context) (org, space string, developer client.Client) {
	GinkgoHelper()
	org = testenv.CreateOrg(ctx, k8s, unique("org"))
	space = testenv.CreateSpace(ctx, k8s, org, "dev")
	u := cftest.NewUser(ctx, k8s, "developer")
	cftest.Bind(ctx, k8s, space, "cf-space-developer", u.Subject())
	cftest.Bind(ctx, k8s, org, "cf-org-user", u.Subject())
	return org, space, u.Client(cp.Config)
}

var _ = Describe("orgs and spaces, as operators and members act on them", func() {
	wait := cf.Wait{Interval: 100 * time.Millisecond, Timeout: 30 * time.Second}

	It("creates an org and a space and waits until their namespaces are ready; a second of the same name needs an operator", func(ctx SpecContext) {
		name := unique("acme")
		org, err := cf.CreateOrg(ctx, k8s, testenv.RootNamespace, name, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cf.AwaitReady(ctx, k8s, org, wait)).To(Succeed())
		space, err := cf.CreateSpace(ctx, k8s, org, "dev", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cf.AwaitReady(ctx, k8s, space, wait)).To(Succeed())

		found, orgName, err := cf.SpaceOfNamespace(ctx, k8s, space.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(found.Name).To(Equal(space.Name))
		Expect(orgName).To(Equal(name))
		byName, err := cf.FindOrg(ctx, k8s, testenv.RootNamespace, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(byName.Name).To(Equal(org.Name))

		twin, err := cf.CreateSpace(ctx, k8s, org, "DEV", "")
		if err == nil { // admission may refuse it at once; else cf-hnc's reconciler says so
			var needsOperator *cf.NeedsOperatorError
			Expect(errors.As(cf.AwaitReady(ctx, k8s, twin, wait), &needsOperator)).To(BeTrue())
			Expect(needsOperator.Ready.Reason).To(Equal(cfv1alpha1.DuplicateNameReason))
		}

		Expect(cf.Delete(ctx, k8s, org, cf.OrgResource)).To(Succeed())
		Expect(cf.DeletionFailure(org, cf.OrgResource, time.Minute, time.Now())).To(MatchError(ContainSubstring("is not being deleted")),
			"the org as it was read before its deletion")
		Expect(cf.AwaitGone(ctx, k8s, org, cf.Wait{Interval: 250 * time.Millisecond, Timeout: 2 * time.Minute})).To(Succeed())
	})
})

var _ = Describe("apps, as their developers push and run them", func() {
	It("creates an app whose name is free in its space, ignoring case, and finds it by name or GUID", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx)
		app, err := cf.CreateApp(ctx, developer, space, "Web", cf.LifecycleChange{Buildpacks: &[]string{"default"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(app.Spec.DesiredState).To(Equal(cfv1alpha1.StoppedState))
		_, err = cf.CreateApp(ctx, developer, space, "web", cf.LifecycleChange{})
		Expect(err).To(MatchError("App with the name 'web' already exists."))
		for _, key := range []string{"WEB", app.Name} {
			found, err := cf.FindApp(ctx, developer, space, key)
			Expect(err).NotTo(HaveOccurred())
			Expect(found.Name).To(Equal(app.Name))
		}
	})

	It("changes the web process as a push does, making it when cf-hnc has not, and says when an app has no process of a type", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx)
		app, err := cf.CreateApp(ctx, developer, space, "web", cf.LifecycleChange{})
		Expect(err).NotTo(HaveOccurred())
		web, _, err := cf.ChangeProcess(ctx, developer, app, cfv1alpha1.WebProcessType, cf.ProcessChange{Instances: ptr.To[int32](2), Command: ptr.To("./serve")})
		Expect(err).NotTo(HaveOccurred())
		Expect(web.Spec).To(And(HaveField("Instances", BeEquivalentTo(2)), HaveField("Command", "./serve"), HaveField("MemoryMB", BeEquivalentTo(1024))))
		Eventually(func() (*cfv1alpha1.CFProcess, error) {
			return web, k8s.Get(ctx, client.ObjectKeyFromObject(web), web)
		}).Should(HaveField("Status.Conditions", Not(BeEmpty())), "cf-hnc runs the process it finds")
		Expect(web.Spec.Instances).To(BeEquivalentTo(2), "cf-hnc keeps it")

		_, _, err = cf.ChangeProcess(ctx, developer, app, "worker", cf.ProcessChange{Instances: ptr.To[int32](1)})
		Expect(cf.IsNotFound(err)).To(BeTrue())
	})

	It("starts an app anew only with a droplet, marking the processes that run it; a rolling restart marks them apart", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx)
		app, err := cf.CreateApp(ctx, developer, space, "web", cf.LifecycleChange{})
		Expect(err).NotTo(HaveOccurred())
		var noDroplet *cf.NoDropletError
		Expect(errors.As(cf.SetState(ctx, developer, app, cfv1alpha1.StartedState, false), &noDroplet)).To(BeTrue())

		droplet := cftest.StagedDroplet(ctx, k8s, space, app.Name)
		Expect(cf.AssignDroplet(ctx, developer, app, droplet)).To(Succeed())
		web := cftest.WebProcess(ctx, k8s, space, app.Name)
		Expect(cf.SetState(ctx, developer, app, cfv1alpha1.StartedState, false)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).NotTo(HaveKey(cfv1alpha1.AppStartedAtAnnotation), "cf-hnc had not run the droplet yet: nothing to make anew")

		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
			return web.Status.Droplet
		}).Should(Equal(droplet))
		Expect(cf.SetState(ctx, developer, app, cfv1alpha1.StartedState, true)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).To(HaveKey(cfv1alpha1.AppStartedAtAnnotation), "a restart makes its instances anew")
		Expect(web.Annotations).NotTo(HaveKey(cfv1alpha1.RestartedAtAnnotation))

		Expect(cf.RestartRolling(ctx, developer, []cfv1alpha1.CFProcess{*web}, time.Now())).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).To(HaveKey(cfv1alpha1.RestartedAtAnnotation), "one at a time")
	})

	It("assigns only a staged droplet of the app itself", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx)
		app, err := cf.CreateApp(ctx, developer, space, "web", cf.LifecycleChange{})
		Expect(err).NotTo(HaveOccurred())
		other, err := cf.CreateApp(ctx, developer, space, "other", cf.LifecycleChange{})
		Expect(err).NotTo(HaveOccurred())
		notAssignable := func(why string) OmegaMatcher {
			return And(BeAssignableToTypeOf(&cf.DropletNotAssignableError{}), MatchError(ContainSubstring(why)))
		}
		Expect(cf.AssignDroplet(ctx, developer, app, "")).To(notAssignable("names no droplet"))
		Expect(cf.AssignDroplet(ctx, developer, app, "no-such-build")).To(notAssignable("has no droplet no-such-build"))
		Expect(cf.AssignDroplet(ctx, developer, app, cftest.StagedDroplet(ctx, k8s, space, other.Name))).To(notAssignable("belongs to another app"))
		failed := cf.NewBuild(app, "never-uploaded")
		Expect(k8s.Create(ctx, failed)).To(Succeed())
		cftest.FinishBuild(ctx, k8s, space, failed.Name, metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuildFailedReason}, nil)
		Expect(cf.AssignDroplet(ctx, developer, app, failed.Name)).To(notAssignable("has not staged successfully"))
		Expect(cf.CurrentDroplet(ctx, developer, app)).Error().To(Satisfy(cf.IsNotFound))
	})
})

var _ = Describe("packages, as a push uploads them", func() {
	It("pushes the source to the space's registry with its credentials, once, and names it in the package", func(ctx SpecContext) {
		reg, err := registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		org, space, developer := developedSpace(ctx)
		app, err := cf.CreateApp(ctx, developer, space, "web", cf.LifecycleChange{})
		Expect(err).NotTo(HaveOccurred())
		pkg, err := cf.CreatePackage(ctx, developer, app)
		Expect(err).NotTo(HaveOccurred())
		cfSpace := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, cfSpace)).To(Succeed())
		layer := func() (string, error) { return sourceLayer(), nil }
		Expect(cf.UploadPackage(ctx, developer, cfSpace, pkg, layer)).To(MatchError(ContainSubstring("has no registry to keep packages in yet")))

		repository, account := cftest.PlaceRegistry(ctx, k8s, reg, org, space)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, cfSpace)).To(Succeed())
		Expect(cf.UploadPackage(ctx, developer, cfSpace, pkg, layer)).To(Succeed())
		Expect(pkg.Uploaded()).To(BeTrue())
		Expect(pkg.Spec.Source.Registry.Image).To(HavePrefix(cfv1alpha1.PackageRepository(repository, app.Name) + "@sha256:"))
		pusher, ok := reg.PushedBy(pkg.Spec.Source.Registry.Image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(account.Username))
		Expect(cf.UploadPackage(ctx, developer, cfSpace, pkg, layer)).To(MatchError(ContainSubstring("has its bits already")))

		newest, err := cf.NewestPackage(ctx, developer, app)
		Expect(err).NotTo(HaveOccurred())
		Expect(newest.Name).To(Equal(pkg.Name))
		build, err := cf.Stage(ctx, developer, newest)
		Expect(err).NotTo(HaveOccurred())
		Expect(build.Spec).To(Equal(cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}))
	})
})

// sourceLayer is the layer of a source of one file.
func sourceLayer() string {
	GinkgoHelper()
	file := filepath.Join(GinkgoT().TempDir(), "layer.tar")
	out, err := os.Create(file)
	Expect(err).NotTo(HaveOccurred())
	layer := cf.NewSourceLayer(out)
	Expect(layer.File("Procfile", 0o644, int64(len("web: x\n")), strings.NewReader("web: x\n"))).To(Succeed())
	Expect(layer.Close()).To(Succeed())
	Expect(out.Close()).To(Succeed())
	return file
}
