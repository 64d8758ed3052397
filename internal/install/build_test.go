package install_test

import (
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeconv "k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/install"
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "install")
}

// configDir is the project's config/.
func configDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config")
}

func build(image string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := install.Build(configDir(), install.Default, image)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

func find(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetNamespace() == namespace && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

func flagValue(args []string, name string) (string, bool) {
	for _, arg := range args {
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

var _ = Describe("config/default", func() {
	It("builds, with everything an installation needs", func() {
		objs := build("")
		for _, want := range [][3]string{
			{"Namespace", "", install.Namespace},
			{"Namespace", "", "cf"},
			{"CustomResourceDefinition", "", "cforgs.workloads.cloudfoundry.org"},
			{"CustomResourceDefinition", "", "cfbuilds.workloads.cloudfoundry.org"},
			{"ServiceAccount", install.Namespace, install.ServiceAccount},
			{"Deployment", install.Namespace, install.ManagerDeployment},
			{"Service", install.Namespace, "cf-hnc-webhook-service"},
			{"Secret", install.Namespace, install.WebhookSecret},
			{"ClusterRole", "", "cf-hnc-manager-role"},
			{"ClusterRoleBinding", "", "cf-hnc-manager-rolebinding"},
			{"Role", install.Namespace, "cf-hnc-manager-role"},
			{"RoleBinding", install.Namespace, "cf-hnc-manager-rolebinding"},
			{"ClusterRole", "", "cf-space-developer"},
			{"ValidatingWebhookConfiguration", "", install.ValidatingWebhookConfiguration},
			{"MutatingWebhookConfiguration", "", install.MutatingWebhookConfiguration},
			{"ValidatingAdmissionPolicy", "", "cf-hnc-manager-writes"},
			{"MutatingAdmissionPolicy", "", "cf-hnc-build-step-messages"},
			{"HNCConfiguration", "", "config"},
			{"ServiceAccount", install.Namespace, install.APIServiceAccount},
			{"ClusterRole", "", "cf-hnc:api"},
			{"ClusterRoleBinding", "", "cf-hnc:api"},
			{"Deployment", install.Namespace, install.APIDeployment},
			{"Service", install.Namespace, "cf-hnc-api"},
		} {
			Expect(find(objs, want[0], want[1], want[2])).NotTo(BeNil(), "%s %s/%s", want[0], want[1], want[2])
		}
	})

	It("binds the manager's roles to the ServiceAccount that the manager policy names", func() {
		objs := build("")
		policy := find(objs, "ValidatingAdmissionPolicy", "", "cf-hnc-manager-writes")
		conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
		Expect(conditions).To(ContainElement(HaveKeyWithValue("expression",
			ContainSubstring("system:serviceaccount:"+install.Namespace+":"+install.ServiceAccount))))
		for _, binding := range []*unstructured.Unstructured{
			find(objs, "ClusterRoleBinding", "", "cf-hnc-manager-rolebinding"),
			find(objs, "RoleBinding", install.Namespace, "cf-hnc-manager-rolebinding"),
		} {
			subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
			Expect(subjects).To(ConsistOf(And(HaveKeyWithValue("kind", "ServiceAccount"),
				HaveKeyWithValue("name", install.ServiceAccount), HaveKeyWithValue("namespace", install.Namespace))))
		}
	})

	It("lets the manager write its certificate Secret and nothing else outside the CF tree", func() {
		policy := find(build(""), "ValidatingAdmissionPolicy", "", "cf-hnc-manager-writes")
		conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
		Expect(conditions).To(ContainElement(And(HaveKeyWithValue("name", "not-the-webhook-certificate"),
			HaveKeyWithValue("expression", And(ContainSubstring("'"+install.WebhookSecret+"'"), ContainSubstring("'"+install.Namespace+"'"))))))
	})

	It("runs two replicas that elect a leader, rotate their certificate and listen beyond loopback", func() {
		objs := build("")
		deployment := &appsv1.Deployment{}
		Expect(runtimeconv.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Deployment", install.Namespace, install.ManagerDeployment).Object, deployment)).To(Succeed())
		Expect(*deployment.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal(install.ServiceAccount))
		c, err := install.ManagerContainerOf(objs)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Args).To(ContainElements("--leader-elect=true", "--enable-webhooks=true", "--cert-rotation=true", "--root-namespace=cf"))

		By("binding every server to an address the kubelet and the Services reach")
		for _, flag := range []string{"health-probe-bind-address", "metrics-bind-address"} {
			addr, ok := flagValue(c.Args, flag)
			Expect(ok).To(BeTrue(), flag)
			host, _, err := net.SplitHostPort(addr)
			Expect(err).NotTo(HaveOccurred())
			Expect(host).To(BeEmpty(), "--%s binds every interface", flag)
		}
		Expect(c.Args).To(ContainElement("--webhook-host="))

		By("mounting the certificate Secret where the webhook server reads it")
		dir, _ := flagValue(c.Args, "webhook-cert-dir")
		Expect(c.VolumeMounts).To(ContainElement(And(HaveField("MountPath", dir), HaveField("Name", "webhook-certs"))))
		Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", "webhook-certs"),
			HaveField("Secret.SecretName", install.WebhookSecret))))

		By("probing the health port, with requests and limits")
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		probePort, _ := flagValue(c.Args, "health-probe-bind-address")
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", c.ReadinessProbe.HTTPGet.Port.StrVal),
			HaveField("ContainerPort", BeEquivalentTo(mustPort(probePort))))))
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			Expect(list).To(HaveKey(corev1.ResourceCPU))
			Expect(list).To(HaveKey(corev1.ResourceMemory))
		}
	})

	It("meets the restricted Pod Security Standard that its namespace enforces", func() {
		objs := build("")
		ns := find(objs, "Namespace", "", install.Namespace)
		Expect(ns.GetLabels()).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		for _, name := range []string{install.ManagerDeployment, install.APIDeployment} {
			deployment := &appsv1.Deployment{}
			Expect(runtimeconv.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Deployment", install.Namespace, name).Object, deployment)).To(Succeed())
			pod := deployment.Spec.Template.Spec
			Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue(), name)
			Expect(*pod.SecurityContext.RunAsUser).NotTo(BeZero(), name)
			Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault), name)
			for _, c := range pod.Containers {
				Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse(), name)
				Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue(), name)
				Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")), name)
			}
		}
	})

	It("serves the CF API over HTTPS from the manager's image, through its Service", func() {
		objs := build("registry.example/cf/cf-hnc:v1.2.3")
		c, err := install.APIContainerOf(objs)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Image).To(Equal("registry.example/cf/cf-hnc:v1.2.3"), "make deploy IMG=... sets both")
		Expect(c.Args).To(ContainElement("--root-namespace=cf"))

		By("listening beyond loopback, with the certificate of the operator's Secret")
		addr, _ := flagValue(c.Args, "address")
		host, containerPort, err := net.SplitHostPort(addr)
		Expect(err).NotTo(HaveOccurred())
		Expect(host).To(BeEmpty())
		deployment := &appsv1.Deployment{}
		Expect(runtimeconv.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Deployment", install.Namespace, install.APIDeployment).Object, deployment)).To(Succeed())
		Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal(install.APIServiceAccount))
		Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", "tls"), HaveField("Secret.SecretName", install.APISecret))))
		Expect(c.VolumeMounts).To(ContainElement(And(HaveField("Name", "tls"), HaveField("MountPath", "/var/run/cf-hnc/api-tls"))))
		Expect(c.Args).To(ContainElements("--tls-cert-file=/var/run/cf-hnc/api-tls/tls.crt", "--tls-key-file=/var/run/cf-hnc/api-tls/tls.key"))
		Expect(c.ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))

		By("sending the Service's HTTPS port to the API's pods")
		service := &corev1.Service{}
		Expect(runtimeconv.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Service", install.Namespace, "cf-hnc-api").Object, service)).To(Succeed())
		Expect(deployment.Spec.Template.Labels).To(Equal(service.Spec.Selector))
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", service.Spec.Ports[0].TargetPort.StrVal),
			HaveField("ContainerPort", BeEquivalentTo(mustAtoi(containerPort))))))
	})

	It("gives the CF API's ServiceAccount only reads", func() {
		objs := build("")
		binding := find(objs, "ClusterRoleBinding", "", "cf-hnc:api")
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		Expect(subjects).To(ConsistOf(And(HaveKeyWithValue("kind", "ServiceAccount"),
			HaveKeyWithValue("name", install.APIServiceAccount), HaveKeyWithValue("namespace", install.Namespace))))
		roleName, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
		rules, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "", roleName).Object, "rules")
		Expect(rules).NotTo(BeEmpty())
		for _, rule := range rules {
			Expect(rule).To(HaveKeyWithValue("verbs", HaveEach(BeElementOf("get", "list", "watch"))))
			Expect(rule).To(HaveKeyWithValue("resources", HaveEach(BeElementOf("cforgs", "cfspaces", "rolebindings", "clusterstacks", "clusterstores"))))
		}
	})

	It("sends the webhooks to the manager's pods through the Service", func() {
		objs := build("")
		for _, config := range []*unstructured.Unstructured{
			find(objs, "ValidatingWebhookConfiguration", "", install.ValidatingWebhookConfiguration),
			find(objs, "MutatingWebhookConfiguration", "", install.MutatingWebhookConfiguration),
		} {
			hooks, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
			Expect(hooks).NotTo(BeEmpty())
			for _, h := range hooks {
				service, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
				Expect(service).To(And(HaveKeyWithValue("name", "cf-hnc-webhook-service"), HaveKeyWithValue("namespace", install.Namespace)))
			}
		}
		service := &corev1.Service{}
		Expect(runtimeconv.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Service", install.Namespace, "cf-hnc-webhook-service").Object, service)).To(Succeed())
		deployment, err := install.ManagerDeploymentOf(objs)
		Expect(err).NotTo(HaveOccurred())
		for k, v := range service.Spec.Selector {
			Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
		}
		c, _ := install.ManagerContainerOf(objs)
		webhookPort, _ := flagValue(c.Args, "webhook-port")
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", service.Spec.Ports[0].TargetPort.StrVal),
			HaveField("ContainerPort", BeEquivalentTo(mustAtoi(webhookPort))))))
	})

	DescribeTable("sets the manager's image without changing the checkout",
		func(image, want string) {
			c, err := install.ManagerContainerOf(build(image))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Image).To(Equal(want))
		},
		Entry("no image: the placeholder", "", install.ManagerImage),
		Entry("a tag", "registry.example/cf/cf-hnc:v1.2.3", "registry.example/cf/cf-hnc:v1.2.3"),
		Entry("a registry with a port, no tag", "localhost:5000/cf-hnc", "localhost:5000/cf-hnc"),
		Entry("a registry with a port and a tag", "localhost:5000/cf-hnc:dev", "localhost:5000/cf-hnc:dev"),
		Entry("a digest", "registry.example/cf-hnc@sha256:"+strings.Repeat("a", 64), "registry.example/cf-hnc@sha256:"+strings.Repeat("a", 64)),
	)

	It("has numbers the API server accepts (int64, not kustomize's int)", func() {
		deployment := find(build(""), "Deployment", install.Namespace, install.ManagerDeployment)
		replicas, _, _ := unstructured.NestedFieldNoCopy(deployment.Object, "spec", "replicas")
		Expect(replicas).To(BeAssignableToTypeOf(int64(0)))
		Expect(func() { deployment.DeepCopy() }).NotTo(Panic())
	})
})

var _ = Describe("config/samples", func() {
	It("hold an org, a space in it, and the org's credentials, ServiceAccount and default Builder", func() {
		objs, err := install.Build(configDir(), install.Samples, "")
		Expect(err).NotTo(HaveOccurred())
		kinds := map[string]*unstructured.Unstructured{}
		for _, obj := range objs {
			kinds[obj.GetKind()] = obj
		}
		Expect(kinds).To(HaveLen(5))
		org := kinds["CFOrg"]
		Expect(org.GetNamespace()).To(Equal("cf"))
		Expect(cfv1alpha1.ValidateNamespaceGUID(org.GetName())).To(BeEmpty())
		for _, kind := range []string{"CFSpace", "Secret", "ServiceAccount", "Builder"} {
			Expect(kinds[kind].GetNamespace()).To(Equal(org.GetName()), "the %s is in the org's namespace", kind)
		}
		for _, kind := range []string{"Secret", "ServiceAccount", "Builder"} {
			Expect(kinds[kind].GetLabels()).To(HaveKeyWithValue(cfv1alpha1.BuildConfigLabel, "true"), "the %s is build configuration", kind)
		}
		Expect(kinds["Secret"].GetAnnotations()).To(HaveKey(cfv1alpha1.DropletRepositoryPrefixAnnotation))

		builder := &kpackv1alpha2.Builder{}
		data, err := kinds["Builder"].MarshalJSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(sigsyaml.UnmarshalStrict(data, builder)).To(Succeed(), "a kpack v1alpha2 Builder")
		Expect(builder.Spec.ServiceAccountName).To(Equal(kinds["ServiceAccount"].GetName()))
		Expect(builder.Spec.Tag).NotTo(BeEmpty())
	})
})

var _ = Describe("the manager's args", func() {
	deployed := []string{"--root-namespace=cf", "--webhook-host=", "--webhook-port=9443", "--leader-elect=true"}
	allowed := []string{"kubeconfig", "webhook-host", "webhook-port"}

	It("keep the Deployment's, set only the allowed flags, and append those it lacks", func() {
		args, err := install.OverrideArgs(deployed, map[string]string{"webhook-host": "127.0.0.1", "webhook-port": "1234", "kubeconfig": "/k"}, allowed)
		Expect(err).NotTo(HaveOccurred())
		Expect(args).To(Equal([]string{"--root-namespace=cf", "--webhook-host=127.0.0.1", "--webhook-port=1234", "--leader-elect=true", "--kubeconfig=/k"}))
	})

	DescribeTable("refuse what could differ from the Deployment unnoticed",
		func(deployed []string, set map[string]string, message string) {
			_, err := install.OverrideArgs(deployed, set, allowed)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a flag not in the list", deployed, map[string]string{"leader-elect": "false"}, "--leader-elect is not one that may differ"),
		Entry("an arg that is not --name=value", []string{"--leader-elect"}, nil, `"--leader-elect" is not --name=value`),
		Entry("a flag given twice", []string{"--concurrency=1", "--concurrency=2"}, nil, "passes --concurrency twice"),
	)
})

var _ = Describe("what only an in-cluster manager needs", func() {
	It("is its Deployment, disruption budget, Services, webhook configuration and certificate, and the CF API's Deployment and Service", func() {
		var inCluster, rest []string
		for _, obj := range build("") {
			name := obj.GetKind() + " " + obj.GetName()
			if install.InClusterOnly(obj) {
				inCluster = append(inCluster, name)
			} else {
				rest = append(rest, name)
			}
		}
		Expect(inCluster).To(ConsistOf("Deployment cf-hnc-manager", "PodDisruptionBudget cf-hnc-manager",
			"Service cf-hnc-webhook-service", "Service cf-hnc-metrics-service", "Deployment cf-hnc-api", "Service cf-hnc-api",
			"ValidatingWebhookConfiguration "+install.ValidatingWebhookConfiguration,
			"MutatingWebhookConfiguration "+install.MutatingWebhookConfiguration, "Secret "+install.WebhookSecret))
		Expect(rest).To(ContainElements("ServiceAccount cf-hnc-manager", "ClusterRoleBinding cf-hnc-manager-rolebinding",
			"Role cf-hnc-manager-role", "CustomResourceDefinition cforgs.workloads.cloudfoundry.org", "Namespace cf"))
	})
})

func mustPort(addr string) int {
	GinkgoHelper()
	_, p, err := net.SplitHostPort(addr)
	Expect(err).NotTo(HaveOccurred())
	return mustAtoi(p)
}

func mustAtoi(s string) int {
	GinkgoHelper()
	n, err := strconv.Atoi(s)
	Expect(err).NotTo(HaveOccurred())
	return n
}
