package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newBuildsCommand(s *session) *cobra.Command {
	output := newListOutput()
	cmd := appCommand(s, &cobra.Command{
		Use:   "builds APP --org ORG -s SPACE [-o json|yaml|...]",
		Short: "List an app's builds: state and reason, rebuild lineage and kpack's reasons, droplets",
		Long: "List the builds (CFBuilds) of an app, oldest first: the ones pushes and restages made, and the rebuilds " +
			"that cf-hnc made when kpack rebuilt a droplet on its own, each with the build whose droplet it rebuilt " +
			"(REBUILD OF, the first of its lineage) and kpack's reasons (STACK for a new run image, BUILDPACK, " +
			"LIFECYCLE). RUNS marks the droplet the app runs (current) and the one held for a restage (held). " +
			"-o prints the CFBuilds instead (json, yaml, name, jsonpath, go-template).",
		PreRunE: func(*cobra.Command, []string) error { return output.check() },
	}, false, func(ctx context.Context, a *appContext) error {
		builds := &cfv1alpha1.CFBuildList{}
		if err := a.c.List(ctx, builds, client.InNamespace(a.target.space.Name)); err != nil {
			return fmt.Errorf("listing the builds of %s: %w", a.target, err)
		}
		builds.Items = slices.DeleteFunc(builds.Items, func(b cfv1alpha1.CFBuild) bool { return b.Spec.AppRef.Name != a.app.Name })
		slices.SortFunc(builds.Items, byCreation)
		return output.print(a.out, builds, func() [][]string { return buildRows(builds.Items, a.app, time.Now()) })
	})
	output.addFlags(cmd)
	return cmd
}

// byCreation orders builds oldest first; rebuilds by kpack's build number, which orders them
// also within one second.
func byCreation(a, b cfv1alpha1.CFBuild) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		cmp.Compare(kpackBuildNumber(&a), kpackBuildNumber(&b)),
		cmp.Compare(a.Name, b.Name))
}

// kpackBuildNumber is a rebuild's kpack build number; 0 for a build that push or restage made.
func kpackBuildNumber(b *cfv1alpha1.CFBuild) int {
	n, _ := strconv.Atoi(b.Labels[cfv1alpha1.KpackBuildNumberLabel])
	return n
}

// buildRows lays out an app's builds as a table, their ages as of now.
func buildRows(builds []cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp, now time.Time) [][]string {
	rows := [][]string{{"BUILD", "AGE", "STATE", "REASON", "REBUILD OF", "REBUILD REASON", "DROPLET", "RUNS"}}
	for _, b := range builds {
		state, _ := b.State()
		succeeded := meta.FindStatusCondition(b.Status.Conditions, cfv1alpha1.SucceededCondition)
		reason := "-"
		if succeeded != nil {
			reason = succeeded.Reason
		}
		droplet := "-"
		if b.Status.Droplet != nil {
			droplet = shortDigest(b.Status.Droplet.Registry.Image)
		}
		runs := ""
		switch {
		case app.Spec.CurrentDropletRef.Name == b.Name:
			runs = "current"
		case app.Status.HeldDropletRef != nil && app.Status.HeldDropletRef.Name == b.Name:
			runs = "held"
		}
		rows = append(rows, []string{b.Name, duration.HumanDuration(now.Sub(b.CreationTimestamp.Time)), string(state), reason,
			orNone(b.Labels[cfv1alpha1.RebuildOfLabel]), orNone(b.Annotations[cfv1alpha1.RebuildReasonAnnotation]), droplet, runs})
	}
	return rows
}

// shortDigest is an image's digest shortened as docker shows image IDs: "sha256:" and 12 hex.
func shortDigest(image string) string {
	_, digest, ok := strings.Cut(image, "@")
	if !ok {
		return image
	}
	if algorithm, hex, ok := strings.Cut(digest, ":"); ok && len(hex) > 12 {
		return algorithm + ":" + hex[:12]
	}
	return digest
}
