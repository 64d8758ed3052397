package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
)

// registryOptions are the flags of set-registry.
type registryOptions struct {
	allOrgs           bool
	server            string
	username          string
	password          string
	passwordStdin     bool
	dropletRepository string
	wait              waitOptions
}

func newSetRegistryCommand(s *session) *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "set-registry (ORG [SPACE] | --all-orgs) --server HOST --username USER (--password-stdin | --password P) [--droplet-repository PREFIX]",
		Short: "Place registry credentials and the build ServiceAccount once for an org, a space or every org",
		Long: "Server-side apply, in the namespace of ORG (or of SPACE in ORG, or the root namespace with --all-orgs), " +
			"a registry credential Secret for HOST and the build ServiceAccount, both labelled " + cfv1alpha1.BuildConfigLabel +
			"=true: cf-hnc propagates them to every space below and lists the credentials on the ServiceAccount. " +
			"Placed for a space, they win over the org's for that space alone, and --droplet-repository may give the space " +
			"a registry and repository of its own, which needs nothing placed at the org. " +
			"Run it again to rotate the password. Then show, for each space affected, whether it can build, " +
			"and for a space where its droplets go.",
		Args:              o.validateArgs,
		ValidArgsFunction: s.completeOrgThenSpace,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.readPassword(cmd.InOrStdin()); err != nil {
				return err
			}
			host, err := o.check()
			if err != nil {
				return err
			}
			c, err := s.client()
			if err != nil {
				return err
			}
			p, err := s.place(cmd.Context(), c, o.allOrgs, args)
			if err != nil {
				return err
			}
			if err := o.checkSpaceRepository(cmd.Context(), c, p, host); err != nil {
				return err
			}
			repository, err := o.repository(cmd.Context(), c, p)
			if err != nil {
				return err
			}
			if err := o.apply(cmd.Context(), c, p, repository); err != nil {
				return fmt.Errorf("placing the registry for %s: %w", p.description, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry %s set for %s: Secret %s and ServiceAccount %s in namespace %s\n",
				o.server, p.description, p.secretName(), p.serviceAccountName(), p.namespace)
			if !o.wait.wait {
				return nil
			}
			if err := p.showEffect(cmd.Context(), c, cmd.OutOrStdout(), host, o.wait.timeout); err != nil || p.level != cfv1alpha1.SpaceLevel {
				return err
			}
			return p.showSpaceRepository(cmd.Context(), c, cmd.OutOrStdout(), strings.TrimSuffix(repository, "/"), o.wait.timeout)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.allOrgs, "all-orgs", false, "Place the registry in the root namespace, for every org that does not place its own.")
	f.StringVar(&o.server, "server", "", "The registry host, as in image references (for example registry.example.com).")
	f.StringVar(&o.username, "username", "", "The registry user.")
	f.StringVar(&o.password, "password", "", "The registry password (visible in the shell history: prefer --password-stdin).")
	f.BoolVar(&o.passwordStdin, "password-stdin", false, "Read the registry password from stdin.")
	f.StringVar(&o.dropletRepository, "droplet-repository", "",
		`Where the droplets of the spaces below go (for example registry.example.com/cf/acme): each space gets "<it>/<space guid>" `+
			`below an org's ("<it>/<org guid>/<space guid>" below the root's). For a space, where its droplets go: within the `+
			`repository placed at its org or the root, only the space's own or one below it; outside it, any repository on HOST, `+
			`which the space's builds push to with these credentials. Omitted, an earlier value is kept.`)
	cobra.CheckErr(cmd.MarkFlagRequired("server"))
	cobra.CheckErr(cmd.MarkFlagRequired("username"))
	cmd.MarkFlagsOneRequired("password", "password-stdin")
	cmd.MarkFlagsMutuallyExclusive("password", "password-stdin")
	o.wait.addFlags(cmd, "the spaces affected have picked up the registry, and show whether they can build")
	return cmd
}

func (o *registryOptions) validateArgs(_ *cobra.Command, args []string) error {
	switch {
	case o.allOrgs && len(args) > 0:
		return errors.New("--all-orgs places the registry for every org: give no ORG or SPACE with it")
	case !o.allOrgs && (len(args) < 1 || len(args) > 2):
		return fmt.Errorf("expected ORG [SPACE] or --all-orgs, got %d arguments", len(args))
	}
	return nil
}

// readPassword takes the password from in for --password-stdin, without the line break that
// `echo` or a file adds.
func (o *registryOptions) readPassword(in io.Reader) error {
	if !o.passwordStdin {
		return nil
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading the password from stdin: %w", err)
	}
	o.password = strings.TrimRight(string(data), "\r\n")
	if o.password == "" {
		return errors.New("--password-stdin: stdin holds no password")
	}
	return nil
}

// apply states the credential Secret and the build ServiceAccount under the plugin's field
// manager, so that running again rotates them in place.
func (o *registryOptions) apply(ctx context.Context, c client.Client, p placement, prefix string) error {
	config, err := dockerConfig(o.server, o.username, o.password)
	if err != nil {
		return err
	}
	labels := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	secret := corev1ac.Secret(p.secretName(), p.namespace).
		WithLabels(labels).
		WithType(corev1.SecretTypeDockerConfigJson).
		WithData(map[string][]byte{corev1.DockerConfigJsonKey: config})
	if prefix != "" {
		secret.WithAnnotations(map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: prefix})
	}
	if err := c.Apply(ctx, secret, fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying Secret %s: %w", p.secretName(), err)
	}
	// The ServiceAccount's secrets are cf-hnc's to fill in: the plugin states only the label.
	sa := corev1ac.ServiceAccount(p.serviceAccountName(), p.namespace).WithLabels(labels)
	if err := c.Apply(ctx, sa, fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying ServiceAccount %s: %w", p.serviceAccountName(), err)
	}
	return nil
}

// repository is the droplet repository that the placed Secret states: --droplet-repository, or
// the one placed before.
func (o *registryOptions) repository(ctx context.Context, c client.Client, p placement) (string, error) {
	if o.dropletRepository != "" {
		return o.dropletRepository, nil
	}
	return p.currentPrefix(ctx, c)
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret for one registry.
func dockerConfig(server, username, password string) ([]byte, error) {
	type credentials struct {
		Auth string `json:"auth"`
	}
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	return json.Marshal(map[string]map[string]credentials{"auths": {server: {Auth: auth}}})
}

// check refuses what cf-hnc would find invalid, before anything is written, and returns the
// registry host of --server as cf-hnc reports it in a space's build configuration.
func (o *registryOptions) check() (string, error) {
	// cf-hnc reads a docker config key without a host as Docker Hub's, as docker does; on the
	// command line it is a mistake.
	withoutScheme := strings.TrimPrefix(strings.TrimPrefix(o.server, "https://"), "http://")
	if withoutScheme == "" || strings.HasPrefix(withoutScheme, "/") {
		return "", fmt.Errorf("--server %q: no registry host", o.server)
	}
	host, err := dockerconfig.RegistryHost(o.server)
	if err != nil {
		return "", fmt.Errorf("--server %q: %w", o.server, err)
	}
	if o.dropletRepository != "" {
		if _, err := name.NewRepository(strings.TrimSuffix(o.dropletRepository, "/"), name.WeakValidation); err != nil {
			return "", fmt.Errorf("--droplet-repository %q: %w", o.dropletRepository, err)
		}
	}
	return host, nil
}

// checkSpaceRepository refuses, before anything is written, a space's --droplet-repository that
// cf-hnc would not build with (InvalidDropletRepository): one within a repository placed in the
// org or the root, other than the space's own there or one below it, and one outside them on
// another registry than --server, which the space's builds would push to with credentials
// placed above the space.
func (o *registryOptions) checkSpaceRepository(ctx context.Context, c client.Client, p placement, host string) error {
	if p.level != cfv1alpha1.SpaceLevel || o.dropletRepository == "" {
		return nil
	}
	spaceRepository, err := p.spaceRepository(ctx, c)
	if err != nil {
		return err
	}
	if spaceRepository != "" && cfv1alpha1.WithinRepository(o.dropletRepository, spaceRepository) {
		return nil
	}
	var placedAbove []string
	for _, namespace := range []string{p.org, p.root} {
		placed, err := placedRepositories(ctx, c, namespace)
		if err != nil {
			return err
		}
		placedAbove = append(placedAbove, slices.Sorted(maps.Values(placed))...)
	}
	flag := fmt.Sprintf("--droplet-repository %q", o.dropletRepository)
	if enclosing := cfv1alpha1.EnclosingRepository(o.dropletRepository, placedAbove); enclosing != "" {
		return fmt.Errorf("%s lies within %q, placed above %s, whose credentials reach it from every space below: "+
			"give %q, the space's own repository there, or one below it, or a repository outside %q, or omit --droplet-repository",
			flag, enclosing, p.description, spaceRepository, enclosing)
	}
	repository, err := name.NewRepository(strings.TrimSuffix(o.dropletRepository, "/"), name.WeakValidation)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	if repository.RegistryStr() != host {
		return fmt.Errorf("%s is a repository of the space's own, on registry %s, which its builds push to with the credentials placed "+
			"for the space, but those are for %s: give --server %s", flag, repository.RegistryStr(), host, repository.RegistryStr())
	}
	return nil
}

// showSpaceRepository waits, up to timeout, until cf-hnc has resolved the droplet repository of
// the placement's space from the placed Secret (want; "" when the Secret states none, and the
// space keeps its path below its org's or the root's), and says where the space's droplets go.
func (p placement) showSpaceRepository(ctx context.Context, c client.Client, out io.Writer, want string, timeout time.Duration) error {
	space := &cfv1alpha1.CFSpace{}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.org, Name: p.namespace}, space); err != nil {
			return false, err
		}
		buildReady := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
		resolved := space.Status.Build != nil && (want == "" || space.Status.Build.DropletRepositoryPrefix == want)
		refused := buildReady != nil && buildReady.Reason == cfv1alpha1.InvalidDropletRepositoryReason
		return resolved || refused || !meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.ReadyCondition), nil
	})
	pending := wait.Interrupted(err) && ctx.Err() == nil
	if err != nil && !pending {
		return err
	}
	switch build := space.Status.Build; {
	case pending:
		fmt.Fprintf(out, "%s has not picked up the droplet repository %s after %s; see kubectl cf tree\n", p.description, want, timeout)
	case build == nil || build.DropletRepositoryPrefix == "":
		fmt.Fprintf(out, "%s has no droplet repository: see why it cannot build with kubectl cf tree\n", p.description)
	default:
		fmt.Fprintf(out, "droplets of %s go to %s\n", p.description, build.DropletRepositoryPrefix)
	}
	return nil
}
