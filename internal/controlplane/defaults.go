package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/registry"
)

// The default build configuration that the local control plane places once in the root
// namespace, as an operator would: a Builder with every seeded buildpack, and the build
// ServiceAccount and credentials that `kubectl cf set-registry --all-orgs` places. The
// credentials are the registry's operator account, which may push builder images and
// droplets below orgs/. Orgs still need their droplet repository (kubectl cf set-registry).
const (
	DefaultBuilder        = "cf-default-builder"
	defaultServiceAccount = "cf-build-root"
	defaultCredentials    = "cf-registry-root"
	// BuilderRepository holds the builder images, under the registry's public prefix so that
	// every org's build pods can pull them with their own credentials.
	BuilderRepository = "cnb/builders/default"
	// OperatorUser is the registry account of the default credentials.
	OperatorUser = "operator"
	// OrgsRepository is where the operator account may push droplets.
	OrgsRepository = "orgs"
)

// placeDefaultBuilder places the default build configuration in the root namespace and waits
// until kpack reports the Builder Ready.
func (cp *ControlPlane) placeDefaultBuilder(ctx context.Context) error {
	user := registry.User{Name: OperatorUser, Password: string(uuid.NewUUID()), Prefixes: []string{"cnb/builders/", OrgsRepository + "/"}}
	if err := cp.kpack.Registry.AddUser(user); err != nil {
		return err
	}
	cp.kpack.OperatorPassword = user.Password
	labels := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: RootNamespace, Name: name, Labels: labels}
	}
	builder := cp.kpack.Builder(RootNamespace, DefaultBuilder, defaultServiceAccount, cp.kpack.Registry.Host()+"/"+BuilderRepository)
	builder.Labels = labels
	objects := []client.Object{
		&corev1.Secret{
			ObjectMeta: meta(defaultCredentials),
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: DockerConfig(cp.kpack.Registry.Host(), user.Name, user.Password)},
		},
		&corev1.ServiceAccount{
			ObjectMeta:       meta(defaultServiceAccount),
			Secrets:          []corev1.ObjectReference{{Name: defaultCredentials}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: defaultCredentials}},
		},
		builder,
	}
	for _, obj := range objects {
		if err := cp.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("placing %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return cp.kpack.controller.waitUntil(ctx, time.Minute, "Builder "+DefaultBuilder+" Ready", func(ctx context.Context) error {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(builder), builder); err != nil {
			return err
		}
		if ready := builder.Status.GetCondition(corev1alpha1.ConditionReady); !ready.IsTrue() {
			return fmt.Errorf("Builder %s is not Ready: %+v", builder.Name, builder.Status.Conditions)
		}
		return nil
	})
}

// Builder is a namespaced Builder on the seeded stack and store with every seeded buildpack,
// every default set explicitly: kpack's defaulting webhook does not run here.
func (k *Kpack) Builder(namespace, name, serviceAccount, tag string) *kpackv1alpha2.Builder {
	var group []kpackv1alpha2.BuilderBuildpackRef
	for _, bp := range k.Images.Buildpacks {
		group = append(group, kpackv1alpha2.BuilderBuildpackRef{BuildpackRef: corev1alpha1.BuildpackRef{
			BuildpackInfo: corev1alpha1.BuildpackInfo{Id: bp.ID}, Optional: true}})
	}
	return &kpackv1alpha2.Builder{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: kpackv1alpha2.NamespacedBuilderSpec{
			BuilderSpec: kpackv1alpha2.BuilderSpec{
				Tag:       tag,
				Stack:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: Stack},
				Store:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStoreKind, Name: Store},
				Lifecycle: corev1.ObjectReference{Kind: kpackv1alpha2.ClusterLifecycleKind, Name: lifecycleName},
				Order:     []kpackv1alpha2.BuilderOrderEntry{{Group: group}},
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
