package cf

import (
	"cmp"
	"context"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// A droplet is a staged CFBuild, and has its GUID, as in Korifi: an app's current droplet names
// the CFBuild.

// Droplet reads the droplet of guid in the app's space as the user: a build that staged.
// NotFoundError of a droplet if there is none, or the build has not staged.
func Droplet(ctx context.Context, c client.Client, namespace, guid string) (*cfv1alpha1.CFBuild, error) {
	build := &cfv1alpha1.CFBuild{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: guid}, build)
	if unreadable(err) || (err == nil && build.StagedDroplet() == nil) {
		return nil, &NotFoundError{Resource: DropletResource}
	}
	return build, about(DropletResource, err)
}

// CurrentDroplet reads the droplet the app runs as the user; NotFoundError of a droplet if it
// has none.
func CurrentDroplet(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) (*cfv1alpha1.CFBuild, error) {
	if app.Spec.CurrentDropletRef.Name == "" {
		return nil, &NotFoundError{Resource: DropletResource}
	}
	return Droplet(ctx, c, app.Namespace, app.Spec.CurrentDropletRef.Name)
}

// AssignDroplet makes the droplet of guid the app's current one, as the user, as cf
// set-droplet and cf push do: a build of the app that staged (DropletNotAssignableError).
func AssignDroplet(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, guid string) error {
	if guid == "" {
		return &DropletNotAssignableError{Why: "the request names no droplet"}
	}
	build := &cfv1alpha1.CFBuild{}
	err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: guid}, build)
	switch {
	case unreadable(err):
		return &DropletNotAssignableError{Why: "the app's space has no droplet " + guid}
	case err != nil:
		return about(DropletResource, err)
	case build.Spec.AppRef.Name != app.Name:
		return &DropletNotAssignableError{Why: "droplet " + build.Name + " belongs to another app"}
	case build.StagedDroplet() == nil:
		return &DropletNotAssignableError{Why: "droplet " + build.Name + " has not staged successfully"}
	case app.Spec.CurrentDropletRef.Name == guid:
		return nil
	}
	return PatchApp(ctx, c, app, func(spec *cfv1alpha1.CFAppSpec) { spec.CurrentDropletRef.Name = guid })
}

// RunDroplet makes a staged build's droplet the app's current one and the app started or
// stopped, as the user, as kubectl cf push and restage do once it staged.
func RunDroplet(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, build string, state cfv1alpha1.DesiredState) error {
	return PatchApp(ctx, c, app, func(spec *cfv1alpha1.CFAppSpec) {
		spec.CurrentDropletRef.Name = build
		spec.DesiredState = state
	})
}

// Droplets calls visit with the droplets of a space, the builds that staged, as the user lists
// them a chunk at a time (eachIn).
func Droplets(ctx context.Context, c client.Client, space string, visit func(*cfv1alpha1.CFBuild)) error {
	return about(DropletResource, eachIn(ctx, c, []string{space}, func() *cfv1alpha1.CFBuildList { return &cfv1alpha1.CFBuildList{} },
		func(l *cfv1alpha1.CFBuildList) []cfv1alpha1.CFBuild { return l.Items }, func(b *cfv1alpha1.CFBuild) {
			if b.StagedDroplet() != nil {
				visit(b)
			}
		}))
}

// HeldDropletFor is the app's held droplet if it is what staging pkg again would give: staged
// from that package, as a rebuild that the org's upgrade policy holds. Otherwise nil. A
// restage runs it rather than staging again.
func HeldDropletFor(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, pkg *cfv1alpha1.CFPackage) (*cfv1alpha1.CFBuild, error) {
	if app.Status.HeldDropletRef == nil {
		return nil, nil
	}
	build := &cfv1alpha1.CFBuild{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: app.Status.HeldDropletRef.Name}, build); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if build.StagedDroplet() == nil || build.Spec.PackageRef.Name != pkg.Name {
		return nil, nil
	}
	return build, nil
}

// DropletStack is the stack of a droplet as Cloud Foundry names it: the name of the
// ClusterStack it was built on, which cf stacks lists and cf push -s takes. The droplet records
// only what kpack built it with, the stack id and the run image, so the ClusterStack is found
// from them: only one of the droplet's stack id can have built it. ClusterStacks may share an id
// (a stack's base and full variants); then only the one whose run image is the droplet's can
// have (SameImage: kpack builds on a copy of the run image that the ClusterStack resolved). The
// app's lifecycle cannot tell: it names the stack of the app's next build, not of this droplet.
// When neither singles out one ClusterStack, the droplet's stack is its stack id, rather than
// the name of one that may not have built it.
func DropletStack(droplet *cfv1alpha1.BuildDropletStatus, stacks []kpackv1alpha2.ClusterStack) string {
	var sameID, sameRunImage []string
	for i := range stacks {
		if StackID(&stacks[i]) != droplet.Stack {
			continue
		}
		sameID = append(sameID, stacks[i].Name)
		if cfv1alpha1.SameImage(stacks[i].Status.RunImage.LatestImage, droplet.RunImage) {
			sameRunImage = append(sameRunImage, stacks[i].Name)
		}
	}
	switch {
	case len(sameID) == 1:
		return sameID[0]
	case len(sameRunImage) == 1:
		return sameRunImage[0]
	}
	return droplet.Stack
}

// StackID is the stack id of a ClusterStack: as kpack resolved it, or as its spec names it
// until then.
func StackID(stack *kpackv1alpha2.ClusterStack) string {
	return cmp.Or(stack.Status.Id, stack.Spec.Id)
}
