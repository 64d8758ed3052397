package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// deleteOptions are the flags of delete-org and delete-space.
type deleteOptions struct {
	force bool
	wait  waitOptions
}

func (o *deleteOptions) addFlags(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVarP(&o.force, "force", "f", false, "Delete without asking.")
	cmd.Flags().BoolVar(&o.wait.wait, "wait", true, "Wait until "+what+" is gone, its namespaces deleted.")
	cmd.Flags().DurationVar(&o.wait.timeout, "timeout", 3*time.Minute, "How long to wait.")
}

// contents is what a space namespace holds that goes with it.
type contents struct {
	apps               []string
	packages, builds   int
	buildConfiguration []string
}

// contentsOf reads what a space namespace holds. What the user may not list is left out.
func contentsOf(ctx context.Context, c client.Client, namespace string) (contents, error) {
	var in contents
	apps := &cfv1alpha1.CFAppList{}
	if err := c.List(ctx, apps, client.InNamespace(namespace)); err != nil {
		return in, fmt.Errorf("listing the apps of namespace %s: %w", namespace, err)
	}
	for _, app := range apps.Items {
		in.apps = append(in.apps, app.Spec.DisplayName)
	}
	slices.SortFunc(in.apps, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	var err error
	if in.packages, err = count(ctx, c, namespace, "CFPackageList"); err != nil {
		return in, err
	}
	if in.builds, err = count(ctx, c, namespace, "CFBuildList"); err != nil {
		return in, err
	}
	in.buildConfiguration, err = buildConfigurationIn(ctx, c, namespace)
	return in, err
}

// count counts the CF objects of a kind in a namespace, reading only their metadata.
func count(ctx context.Context, c client.Client, namespace, listKind string) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(cfv1alpha1.GroupVersion.WithKind(listKind))
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return 0, fmt.Errorf("listing %s of namespace %s: %w", strings.TrimSuffix(listKind, "List"), namespace, err)
	}
	return len(list.Items), nil
}

// buildConfigurationIn names the build-config Secrets and ServiceAccounts in a namespace: those
// placed there, and HNC's copies of those placed above. Someone who may not list them (an org
// manager may not read Secrets) is told so.
func buildConfigurationIn(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	var names []string
	for _, kind := range []string{"Secret", "ServiceAccount"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
		err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{cfv1alpha1.BuildConfigLabel: "true"})
		if apierrors.IsForbidden(err) {
			names = append(names, kind+"s (you may not list them)")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the build-config %ss of namespace %s: %w", kind, namespace, err)
		}
		for _, item := range list.Items {
			names = append(names, kind+" "+item.Name)
		}
	}
	return names, nil
}

// rows are the table rows of what a space holds.
func (in contents) rows() [][]string {
	apps := fmt.Sprint(len(in.apps))
	if len(in.apps) > 0 {
		apps += ": " + strings.Join(in.apps, ", ")
	}
	return [][]string{
		{"  apps", apps},
		{"  packages", fmt.Sprint(in.packages)},
		{"  builds", fmt.Sprint(in.builds)},
	}
}

// confirm asks question on out and reads the answer from in: only "y" or "yes" (any case) agree.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N]: ", question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	answer = strings.TrimSpace(answer)
	if f, ok := in.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		// A terminal echoes what is typed; for a pipe the transcript shows the answer read.
		fmt.Fprintln(out, answer)
	}
	answer = strings.ToLower(answer)
	return answer == "y" || answer == "yes"
}

// waitGone waits until obj, an org or a space being deleted, is gone (cf.AwaitGone); after the
// timeout it says where the deletion stands.
func waitGone(ctx context.Context, c client.Client, obj cf.Conditioned, timeout time.Duration) error {
	err := cf.AwaitGone(ctx, c, obj, cf.Wait{Interval: pollInterval, Timeout: timeout})
	var notGone *cf.NotGoneError
	if errors.As(err, &notGone) {
		return fmt.Errorf("still being deleted after %s: %s", timeout, describe(notGone.Ready))
	}
	return err
}
