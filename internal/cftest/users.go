package cftest

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// User is a Kubernetes user with real credentials that the apiserver accepts, as a kubeconfig
// user hands them to the cf CLI: a token of a ServiceAccount of a namespace of its own. The
// apiserver puts the user in the group system:serviceaccounts:<namespace>, which only this user
// is in.
type User struct {
	// Name is the user's name as the apiserver names them.
	Name string
	// Namespace is the namespace of the user's ServiceAccount.
	Namespace string
	// Token is a token that the apiserver issued for the user.
	Token string
}

// NewUser makes a user named after name, in a namespace of its own, with c.
func NewUser(ctx context.Context, c client.Client, name string) User {
	GinkgoHelper()
	namespace := name + "-" + string(uuid.NewUUID())[:8]
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	return User{Name: cfServiceAccount(namespace, name), Namespace: namespace, Token: Token(ctx, c, namespace, name)}
}

func cfServiceAccount(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Token makes a ServiceAccount and returns a token that the apiserver issues for it.
func Token(ctx context.Context, c client.Client, namespace, name string) string {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	Expect(c.Create(ctx, sa)).To(Succeed())
	request := &authenticationv1.TokenRequest{}
	Expect(c.SubResource("token").Create(ctx, sa, request)).To(Succeed())
	return request.Status.Token
}

// Group is the group that the apiserver puts the user, and only the user, in.
func (u User) Group() string { return "system:serviceaccounts:" + u.Namespace }

// Subject is the user as a RoleBinding names them.
func (u User) Subject() rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u.Name}
}

// Authorization is the Authorization header that the cf CLI sends for the user.
func (u User) Authorization() string { return "Bearer " + u.Token }

// Client is a client of the apiserver of config that acts as the user.
func (u User) Client(config *rest.Config) client.Client {
	GinkgoHelper()
	userConfig := rest.AnonymousClientConfig(config)
	userConfig.BearerToken = u.Token
	c, err := client.New(userConfig, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// Operator makes a user bound cluster-wide to cf-operator, as the people who run the
// foundation are.
func Operator(ctx context.Context, c client.Client) User {
	GinkgoHelper()
	u := NewUser(ctx, c, "operator")
	Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cf-operator-" + u.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-operator"},
		Subjects:   []rbacv1.Subject{u.Subject()},
	})).To(Succeed())
	return u
}

// Bind binds a subject to a CF role in a namespace, as an org manager or an operator would.
func Bind(ctx context.Context, c client.Client, namespace, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	GinkgoHelper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role + "-" + string(uuid.NewUUID())[:8]},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	Expect(c.Create(ctx, binding)).To(Succeed())
	return binding
}

// PlaceRegistry places an org's registry credentials and droplet repository as kubectl cf
// set-registry does, for a registry account that may push below the org's repository, and
// waits until the build configuration of a space of the org names them; it returns the space's
// droplet repository and the account. A suite without kpack has a registry then, but no
// Builder, and cannot build.
func PlaceRegistry(ctx context.Context, c client.Client, reg *registry.Registry, org, space string) (repository string, account *authn.Basic) {
	GinkgoHelper()
	account = &authn.Basic{Username: "org-" + org[:8], Password: "secret-" + org[:8]}
	Expect(reg.AddUser(registry.User{Name: account.Username, Password: account.Password, Prefixes: []string{"orgs/" + org + "/"}})).To(Succeed())
	config, err := json.Marshal(map[string]map[string]map[string]string{"auths": {reg.Host(): {
		"auth": base64.StdEncoding.EncodeToString([]byte(account.Username + ":" + account.Password)),
	}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: org, Name: cfv1alpha1.RegistrySecretName(cfv1alpha1.OrgLevel),
			Labels:      map[string]string{cfv1alpha1.BuildConfigLabel: "true"},
			Annotations: map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: reg.Host() + "/orgs/" + org},
		},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: config},
	})).To(Succeed())
	Eventually(func(g Gomega) {
		cfSpace := &cfv1alpha1.CFSpace{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, cfSpace)).To(Succeed())
		g.Expect(cfSpace.Status.Build).NotTo(BeNil())
		g.Expect(cfSpace.Status.Build.RegistryCredentials).NotTo(BeEmpty())
		repository = cfSpace.Status.Build.DropletRepositoryPrefix
		g.Expect(repository).To(Equal(reg.Host() + "/orgs/" + org + "/" + space))
	}).Should(Succeed())
	return repository, account
}

// ApplyCFRoles applies the ClusterRoles of the rbac kustomization of configDir (the CF roles
// among them), as config/default installs them: a suite's control plane runs no cf-hnc
// installation.
func ApplyCFRoles(ctx context.Context, c client.Client, configDir string) {
	GinkgoHelper()
	objs, err := install.Build(configDir, "rbac", "")
	Expect(err).NotTo(HaveOccurred())
	var roles []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRole" {
			roles = append(roles, obj)
		}
	}
	Expect(roles).NotTo(BeEmpty())
	Expect(install.Apply(ctx, c, roles)).To(Succeed())
}
