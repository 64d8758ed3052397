package standinkubelet

import (
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	registryUser     = "pusher"
	registryPassword = "s3cret"
)

// authenticatingRegistry is an in-memory registry on 127.0.0.1 that requires basic auth.
func authenticatingRegistry() (host string, stop func()) {
	registry := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, ok := r.BasicAuth(); !ok || user != registryUser || password != registryPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		registry.ServeHTTP(w, r)
	}))
	return strings.TrimPrefix(server.URL, "http://"), server.Close
}

var pusher = authn.FromConfig(authn.AuthConfig{Username: registryUser, Password: registryPassword})

func pushImage(ref string, img v1.Image) string {
	parsed, err := name.ParseReference(ref)
	Expect(err).NotTo(HaveOccurred())
	Expect(remote.Write(parsed, img, remote.WithAuth(pusher))).To(Succeed())
	return parsed.Context().Name() + "@" + must(img.Digest()).String()
}

func pullImage(ref string) (v1.Image, error) {
	parsed, err := name.ParseReference(ref)
	Expect(err).NotTo(HaveOccurred())
	return remote.Image(parsed, remote.WithAuth(pusher))
}

func dockerConfigSecret(name, host, password string) *corev1.Secret {
	data, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"username": registryUser, "password": password}}})
	Expect(err).NotTo(HaveOccurred())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: data},
	}
}

// binaryAssets is where the project keeps kube-apiserver and etcd, unless KUBEBUILDER_ASSETS
// says otherwise (envtest reads it itself).
func binaryAssets() string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	Expect(err).NotTo(HaveOccurred())
	return dir
}

var _ = Describe("Kubelet, against a real apiserver and registry", Ordered, func() {
	var (
		cfg       *rest.Config
		k8s       client.Client
		kubelet   *Kubelet
		stop      func()
		host      string
		runV1     string
		runV2     string
		builder   string
		source    string
		namespace string
	)

	// start runs a new Kubelet until stop is called or the spec ends.
	start := func() {
		var err error
		kubelet, err = New(cfg, Options{Logger: GinkgoLogr})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func(k *Kubelet) { done <- k.Run(ctx) }(kubelet)
		stop = sync.OnceFunc(func() {
			cancel()
			Expect(<-done).To(Succeed())
		})
		DeferCleanup(stop)
	}

	BeforeAll(func() {
		env := &envtest.Environment{BinaryAssetsDirectory: binaryAssets()}
		var err error
		cfg, err = env.Start()
		Expect(err).NotTo(HaveOccurred(), "kube-apiserver and etcd are expected in %s (hack/tools.sh)", binaryAssets())
		DeferCleanup(env.Stop)
		k8s, err = client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())

		var stopRegistry func()
		host, stopRegistry = authenticatingRegistry()
		DeferCleanup(stopRegistry)
		runV1 = pushImage(host+"/stack/run:v1", runImageFixture(testStack, "1"))
		runV2 = pushImage(host+"/stack/run:v2", runImageFixture(testStack, "2"))
		builder = pushImage(host+"/builders/default", builderFixture(host+"/stack/run"))
		source = pushImage(host+"/sources/app", sourceFixture(map[string]string{"Procfile": "web: ./app", "app": "#!/bin/sh"}))

		start()
	})

	// newSpace creates a namespace whose ServiceAccount "builder" holds registry Secrets as an
	// operator would set them up: one to push, one to pull the builder, one to pull sources.
	newSpace := func(pushPassword string, withBuilderPull bool) *corev1.Secret {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "space-"}}
		Expect(k8s.Create(context.Background(), ns)).To(Succeed())
		namespace = ns.Name
		push := dockerConfigSecret("push", host, pushPassword)
		sa := &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "builder"},
			Secrets:    []corev1.ObjectReference{{Name: push.Name}},
		}
		if withBuilderPull {
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "builder-pull"}}
		}
		for _, obj := range []client.Object{push, dockerConfigSecret("builder-pull", host, registryPassword), dockerConfigSecret("source-pull", host, registryPassword), sa} {
			obj.SetNamespace(namespace)
			Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		}
		return push
	}

	// createPod creates the pod kpack creates for the build.
	createPod := func(build *kpackv1alpha2.Build, runImage string, push *corev1.Secret) *corev1.Pod {
		build.Namespace = namespace
		pod := podFor(build, builder, runImage, *push)
		Expect(k8s.Create(context.Background(), pod)).To(Succeed())
		return pod
	}

	finished := func(pod *corev1.Pod) *corev1.Pod {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		return pod
	}

	completionOf := func(pod *corev1.Pod) map[string]any {
		GinkgoHelper()
		Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), "pod status: %+v", pod.Status)
		Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		return decodeCompletion(pod.Status.ContainerStatuses[0].State.Terminated.Message)
	}

	terminated := func(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
		GinkgoHelper()
		for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			if s.Name == container {
				Expect(s.State.Terminated).NotTo(BeNil(), "state of %s: %+v", container, s.State)
				return s.State.Terminated
			}
		}
		Fail("no status for container " + container)
		return nil
	}

	tag := func() string { return host + "/apps/" + namespace + "/app" }

	var built string

	It("completes a build pod: the app image is pushed with the ServiceAccount's credentials and reported as kpack reads it", func() {
		push := newSpace(registryPassword, true)
		pod := finished(createPod(kpackBuild(namespace, tag(), source), runV1, push))

		Expect(pod.Spec.ImagePullSecrets).To(BeEmpty(), "envtest disables the ServiceAccount admission plugin")
		Expect(terminated(pod, "completion").FinishedAt.After(pod.CreationTimestamp.Time)).To(BeTrue(),
			"the pod finishes in a later second than it was created in, so that kpack can order the Image's Builds")
		metadata := completionOf(pod)
		built = metadata["latestImage"].(string)
		Expect(built).To(HavePrefix(tag() + "@sha256:"))
		Expect(metadata).To(HaveKeyWithValue("stackID", testStack))
		Expect(metadata).To(HaveKeyWithValue("stackRunImage", runV1))
		Expect(metadata).To(HaveKeyWithValue("lifecycleVersion", testLifecycleVersion))
		Expect(metadata["buildpackMetadata"]).To(HaveLen(len(expectedBuildpacks)))

		img, err := pullImage(tag() + ":b1")
		Expect(err).NotTo(HaveOccurred())
		Expect(built).To(HaveSuffix(must(img.Digest()).String()), "every tag names the app image")
		Expect(labelsOf(img)).To(HaveKey(cnb.BuildMetadataLabel))

		_, err = remote.Image(must(name.ParseReference(built)))
		Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")), "the registry requires the credentials")
	})

	It("rebases the app image onto the new run image for a STACK rebuild", func() {
		push := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "push"}, push)).To(Succeed())

		pod := finished(createPod(asRebase(kpackBuild(namespace, tag(), source), built), runV2, push))

		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		metadata := completionOf(pod)
		Expect(metadata["latestImage"]).NotTo(Equal(built))
		Expect(metadata).To(HaveKeyWithValue("stackRunImage", runV2))
		rebased := must(pullImage(metadata["latestImage"].(string)))
		Expect(labelsOf(rebased)).To(HaveKeyWithValue(cnb.StackLabelPrefix+"version", "2"))
	})

	It("fails builds and rebases of an Image as a failing lifecycle step does, while FailBuilds holds", func() {
		push := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "push"}, push)).To(Succeed())
		before := must(must(pullImage(tag())).Digest())
		restore := kubelet.FailBuilds(types.NamespacedName{Namespace: namespace, Name: "app"}, "stack upgrade refused")

		rebuild := kpackBuild(namespace, tag(), source)
		rebuild.Name = "app-build-3"
		pod := finished(createPod(rebuild, runV2, push))
		Expect(pod.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(terminated(pod, "build")).To(And(HaveField("ExitCode", BeEquivalentTo(exitBuildpackFailed)), HaveField("Message", "stack upgrade refused")))

		rebase := asRebase(kpackBuild(namespace, tag(), source), built)
		rebase.Name = "app-build-4"
		pod = finished(createPod(rebase, runV2, push))
		Expect(pod.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(terminated(pod, "rebase")).To(And(HaveField("ExitCode", BeEquivalentTo(exitFailed)), HaveField("Message", "stack upgrade refused")))
		Expect(must(pullImage(tag())).Digest()).To(Equal(before), "the app image stays")

		restore()
		again := kpackBuild(namespace, tag(), source)
		again.Name = "app-build-5"
		Expect(finished(createPod(again, runV2, push)).Status.Phase).To(Equal(corev1.PodSucceeded))
	})

	It("runs a pod with scheduling gates only once they are gone, as a pod is scheduled only then", func() {
		push := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "push"}, push)).To(Succeed())
		gated := kpackBuild(namespace, tag(), source)
		gated.Name = "app-build-gated"
		build := gated.DeepCopy()
		build.Namespace = namespace
		pod := podFor(build, builder, runV1, *push)
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/rollout"}}
		Expect(k8s.Create(context.Background(), pod)).To(Succeed())

		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(pod.Status.InitContainerStatuses).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())

		patch := client.MergeFrom(pod.DeepCopy())
		pod.Spec.SchedulingGates = nil
		Expect(k8s.Patch(context.Background(), pod, patch)).To(Succeed())
		Expect(finished(pod).Status.Phase).To(Equal(corev1.PodSucceeded))
	})

	It("fails the pods of Builds without an Image that FailBuildsMatching selects", func() {
		push := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "push"}, push)).To(Succeed())
		DeferCleanup(kubelet.FailBuildsMatching(namespace, labels.SelectorFromSet(labels.Set{"example.com/app": "app"}), "rebase refused"))

		standalone := asRebase(kpackBuild(namespace, tag(), source), built)
		standalone.Name = "app-rebase-1"
		standalone.Labels = map[string]string{"example.com/app": "app"}
		pod := finished(createPod(standalone, runV2, push))
		Expect(terminated(pod, "rebase")).To(HaveField("Message", "rebase refused"))
	})

	It("writes a Build's registry cache and reports it as kpack's completion binary does", func() {
		push := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "push"}, push)).To(Succeed())
		build := kpackBuild(namespace, tag(), source)
		build.Name = "app-build-6"
		build.Spec.Cache = &kpackv1alpha2.BuildCacheConfig{Registry: &kpackv1alpha2.RegistryCache{Tag: tag() + "-cache"}}

		metadata := completionOf(finished(createPod(build, runV1, push)))

		cache := must(pullImage(tag() + "-cache"))
		Expect(metadata).To(HaveKeyWithValue("latestCacheImage", tag()+"-cache@"+must(cache.Digest()).String()))
	})

	It("fails the prepare step when the ServiceAccount's credentials cannot push", func() {
		push := newSpace("wrong", true)

		pod := finished(createPod(kpackBuild(namespace, tag(), source), runV1, push))

		Expect(pod.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(terminated(pod, "prepare")).To(And(
			HaveField("ExitCode", BeEquivalentTo(exitFailed)),
			HaveField("Message", ContainSubstring(fmt.Sprintf("Error verifying write access to %q", tag()))),
		))
	})

	It("leaves a pod whose builder image cannot be pulled pending with ErrImagePull", func() {
		push := newSpace(registryPassword, false)

		pod := createPod(kpackBuild(namespace, tag(), source), runV1, push)

		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(pod.Status.InitContainerStatuses).To(ContainElement(And(
				HaveField("Name", "analyze"),
				HaveField("State.Waiting.Reason", "ErrImagePull"),
				HaveField("State.Waiting.Message", ContainSubstring("401 Unauthorized")),
			)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("loses nothing across a restart and never redoes a finished pod", func() {
		push := newSpace(registryPassword, true)
		done := finished(createPod(kpackBuild(namespace, tag(), source), runV1, push))
		stop()

		waiting := kpackBuild(namespace, tag(), source)
		waiting.Name = "app-build-2"
		pod := createPod(waiting, runV1, push)
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
		}).WithTimeout(time.Second).Should(Succeed())

		start()
		Expect(finished(pod).Status.Phase).To(Equal(corev1.PodSucceeded))
		Expect(completionOf(pod)["latestImage"]).To(Equal(completionOf(done)["latestImage"]), "the same inputs export the same image")
		current := &corev1.Pod{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(done), current)).To(Succeed())
		Expect(current.ResourceVersion).To(Equal(done.ResourceVersion))
	})
})
