package buildconfig

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

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

// FuzzServiceAccountCredentials places up to four credential Secrets in an org and at the root,
// each with credentials for some of three registry hosts. Whatever they hold, the org's build
// ServiceAccount lists every Secret that wins a registry once, and for every registry where no
// level places two, the first Secret it lists with credentials for it, the one kpack builds
// with, is the one that wins there.
func FuzzServiceAccountCredentials(f *testing.F) {
	f.Add([]byte{0x13, 0x02})
	f.Add([]byte{0x03, 0x12, 0x04})
	f.Add([]byte{0x17, 0x03, 0x16, 0x01})
	hosts := []string{"a.local", "b.local", "c.local"}
	org := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org", Labels: map[string]string{
		"org" + hncv1alpha2.LabelTreeDepthSuffix: "0", "cf" + hncv1alpha2.LabelTreeDepthSuffix: "1"}}}
	f.Fuzz(func(t *testing.T, placements []byte) {
		// Each byte is a Secret: bit 4 places it at the root, bits 0-2 choose its hosts.
		var secrets []corev1.Secret
		for i, b := range placements[:min(len(placements), 4)] {
			auths := map[string]any{}
			for h, host := range hosts {
				if b&(1<<h) != 0 {
					auths[host] = map[string]string{"auth": "dXNlcjpzZWNyZXQ="}
				}
			}
			config, _ := json.Marshal(map[string]any{"auths": auths})
			s := corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: fmt.Sprintf("secret-%d", i)},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
			}
			if b&0x10 != 0 {
				s.Labels = map[string]string{hncv1alpha2.LabelInheritedFrom: "cf"}
			}
			secrets = append(secrets, s)
		}
		listed := ServiceAccountCredentials(org, secrets)
		held := credentialsIn(ancestryOf(org), secrets)
		for host, winners := range held.winners {
			if !slices.Contains(listed, winners[0].name) {
				t.Fatalf("%s, which wins for %s, is not listed: %v", winners[0].name, host, listed)
			}
			if first := held.firstListed(listed, host); len(winners) == 1 && first != winners[0].name {
				t.Fatalf("builds would use %s for %s, but %s wins there: %v", first, host, winners[0].name, listed)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(listed)))) != len(listed) {
			t.Fatalf("a Secret is listed twice: %v", listed)
		}
	})
}
