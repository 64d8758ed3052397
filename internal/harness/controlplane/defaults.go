package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// The default build configuration that the local control plane places once, as an operator
// would: a default Builder with every seeded buildpack in the root namespace, labelled so that
// cf-hnc makes a ClusterBuilder of it for every space, and the ServiceAccount and credentials
// that the ClusterBuilder pushes with in the builder namespace, outside HNC's tree, where no
// space developer can read them (ADR 9). kpack also tries to build the placed Builder in the
// root, where it has no credentials: it stays not ready there, and spaces never use it. The
// operator account may push only builder images, under the registry's public prefix, from
// where every space's builds pull them. Orgs place their own credentials and droplet
// repository (kubectl cf set-registry), with tenant accounts.
const (
	DefaultBuilder        = "cf-default-builder"
	builderServiceAccount = "cf-builder"
	builderCredentials    = "cf-builder-registry"
	// BuilderRepository holds the builder images, under the registry's public prefix so that
	// every org's build pods can pull them with their own credentials.
	BuilderRepository = "cnb/builders/default"
	// OperatorUser is the registry account that pushes the builder images.
	OperatorUser = "operator"
	// OrgsRepository is where the tenant accounts "orgs/<name>" may each push below
	// "orgs/<name>/" (with Kpack.TenantPassword): per-org credentials for the local registry.
	OrgsRepository = "orgs"
)

// placeDefaultBuilder places the default build configuration: the credentials in the builder
// namespace, the Builder in the root.
func (cp *ControlPlane) placeDefaultBuilder(ctx context.Context) error {
	user := registry.User{Name: OperatorUser, Password: string(uuid.NewUUID()), Prefixes: []string{"cnb/builders/"}}
	if err := cp.kpack.Registry.AddUser(user); err != nil {
		return err
	}
	cp.kpack.TenantPassword = string(uuid.NewUUID())
	if err := cp.kpack.Registry.AddTenantAccounts(OrgsRepository+"/", cp.kpack.TenantPassword); err != nil {
		return err
	}
	credentials := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: BuilderNamespace, Name: name} }
	builder := cp.kpack.Builder(RootNamespace, DefaultBuilder, builderServiceAccount, cp.kpack.Registry.Host()+"/"+BuilderRepository)
	builder.Labels = map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	objects := []client.Object{
		&corev1.Secret{
			ObjectMeta: credentials(builderCredentials),
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: DockerConfig(cp.kpack.Registry.Host(), user.Name, user.Password)},
		},
		&corev1.ServiceAccount{
			ObjectMeta:       credentials(builderServiceAccount),
			Secrets:          []corev1.ObjectReference{{Name: builderCredentials}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: builderCredentials}},
		},
		builder,
	}
	for _, obj := range objects {
		if err := cp.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("placing %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return nil
}

// waitForDefaultClusterBuilder waits until kpack reports Ready the ClusterBuilder that the
// manager made of the default Builder, so that builds start at once.
func (cp *ControlPlane) waitForDefaultClusterBuilder(ctx context.Context) error {
	clusterBuilder := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: buildconfig.ClusterBuilderName(RootNamespace, DefaultBuilder)}}
	return cp.waitKpackReady(ctx, clusterBuilder)
}

// Builder is a namespaced Builder on the seeded stack and store with every seeded buildpack,
// every default set explicitly, as cf-hnc sets them on what it makes. Its order is Cloud
// Foundry's detection: one group per buildpack, in the operator's order (Go, Java, Node.js,
// Procfile), so that the first buildpack that detects an app builds it alone. One group with
// every buildpack optional would run every buildpack that detects.
func (k *Kpack) Builder(namespace, name, serviceAccount, tag string) *kpackv1alpha2.Builder {
	var order []kpackv1alpha2.BuilderOrderEntry
	for _, bp := range k.Images.Buildpacks {
		order = append(order, kpackv1alpha2.BuilderOrderEntry{Group: []kpackv1alpha2.BuilderBuildpackRef{
			{BuildpackRef: corev1alpha1.BuildpackRef{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: bp.ID}}},
		}})
	}
	return &kpackv1alpha2.Builder{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: kpackv1alpha2.NamespacedBuilderSpec{
			BuilderSpec: kpackv1alpha2.BuilderSpec{
				Tag:       tag,
				Stack:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: Stack},
				Store:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStoreKind, Name: Store},
				Lifecycle: corev1.ObjectReference{Kind: kpackv1alpha2.ClusterLifecycleKind, Name: lifecycleName},
				Order:     order,
			},
			ServiceAccountName: serviceAccount,
		},
	}
}

// DockerConfig is the content of a kubernetes.io/dockerconfigjson Secret for one registry.
func DockerConfig(host, user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))
}
