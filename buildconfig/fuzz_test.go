package buildconfig

import (
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// FuzzResolve resolves a space whose org places a droplet repository and whose own Secret (a
// tenant's, if admission let one through) says anything at all: whatever it says, the space's
// droplets stay within the space's own repository below the org's, or go outside the org's
// repository, pushed with the space's own credentials or none; the org's credentials never push
// them anywhere else. The condition is one of the documented reasons.
func FuzzResolve(f *testing.F) {
	f.Add("registry.local/org", "registry.local/org/space/team", []byte(`{"auths":{"registry.local":{"auth":"dXNlcjpzZWNyZXQ="}}}`))
	f.Add("registry.local/org", "registry.local/other-org", []byte(`{"auths":{"registry.local":{"auth":"dXNlcjpzZWNyZXQ="}}}`))
	f.Add("registry.local/org", "registry.local/other-org", []byte(`{"auths":{"other.local":{"auth":"dXNlcjpzZWNyZXQ="}}}`))
	f.Add("registry.local/org/", "registry.local/org/space/../../other", []byte(`{"auths":{"registry.local":{}}}`))
	f.Add("registry.local/org", "registry.local/org/spacex", []byte(`{`))
	f.Add("0", "1", []byte(`0`))
	f.Add("REGISTRY/Org", "", []byte(`{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"}}}`))
	f.Fuzz(func(t *testing.T, orgPrefix, spacePrefix string, spaceDockerConfig []byte) {
		in := orgSetup()
		in.secrets[0].Annotations[cfv1alpha1.DropletRepositoryPrefixAnnotation] = orgPrefix
		own := credentials("space", "space-registry", "registry.local", spacePrefix)
		own.Data[corev1.DockerConfigJsonKey] = spaceDockerConfig
		in.secrets = append(in.secrets, own)

		r := resolve(in)
		c := r.condition()
		if c.Reason != cfv1alpha1.BuildConfigCompleteReason && !slices.Contains(reasonPriority, c.Reason) {
			t.Fatalf("undocumented reason %q", c.Reason)
		}
		got := r.config.DropletRepositoryPrefix
		spaceRepository := cfv1alpha1.SpaceRepository(orgPrefix, []string{"space"})
		if got == "" || cfv1alpha1.WithinRepository(got, spaceRepository) {
			return
		}
		if cfv1alpha1.WithinRepository(got, orgPrefix) {
			t.Fatalf("droplets of the space would go to %q, within the org's repository %q but outside the space's %q", got, orgPrefix, spaceRepository)
		}
		repo, err := name.NewRepository(got, name.WeakValidation)
		if err != nil {
			t.Fatalf("droplets of the space would go to %q, which is no repository: %v", got, err)
		}
		// Without credentials for its registry nothing is pushed there (RegistryCredentialsMissing).
		if slices.ContainsFunc(r.config.RegistryCredentials, func(rc cfv1alpha1.RegistryCredential) bool {
			return rc.Registry == repo.RegistryStr() && rc.Secret.From != "space"
		}) {
			t.Fatalf("droplets of the space would go to %q, outside the org's repository, pushed with credentials placed above: %v", got, r.config.RegistryCredentials)
		}
	})
}
