package e2e_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// The rollouts of docs/runbook.md, each as the exact sequence the runbook gives: the operator's
// steps as the cluster administrator (kubectl's patches, applied here as the same patch
// documents; kubectl cf for the rest), the developer's as a space developer through kubectl cf.
var _ = Describe("The runbook (docs/runbook.md)", func() {
	// The runbook's new stack; publishing its images and creating its ClusterStack is the
	// harness's AddStack.
	const newStack, newStackID = "cflinuxfs5", "io.buildpacks.stacks.noble"

	It("migrates the existing apps of an org that builds with the root's Builder to another stack: a Builder on it placed in the org, then restage-org", func(ctx SpecContext) {
		orgName := "migrate-" + string(uuid.NewUUID())[:8]
		org := createOrg(ctx, orgName)
		space := createSpace(ctx, org, "dev")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		developer := "dev-" + string(uuid.NewUUID())[:8]
		spaceDeveloper(ctx, developer, space)
		DeferCleanup(func(ctx SpecContext) { cliDeleteApps(ctx, space) })
		cf("push", "web", "-n", space, "-p", appSource(), "--as", developer)
		cf("push", "worker", "-n", space, "-p", appSource(), "--no-start", "--as", developer)
		web, worker := appNamed(ctx, orgName, "web"), appNamed(ctx, orgName, "worker")
		Expect(getBuild(ctx, space, web.Spec.CurrentDropletRef.Name).Status.Builder).To(Equal(root+"."+controlplane.DefaultBuilder), "the root's Builder")

		By("the operator creating the new stack's ClusterStack")
		_, err := cp.AddStack(ctx, newStack, newStackID)
		Expect(err).NotTo(HaveOccurred())

		By("the operator placing a default Builder on the new stack in the org")
		builder := cp.Kpack().Builder(org, controlplane.DefaultBuilder, "cf-build-org", cp.Kpack().Registry.Host()+"/"+org+"/builders/default")
		builder.Labels = buildConfig
		builder.Spec.Stack = corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: newStack}
		Expect(k8s.Create(ctx, builder)).To(Succeed())
		Eventually(func() *cfv1alpha1.PlacedBuilder {
			s := &cfv1alpha1.CFSpace{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
			return s.Status.Build.Builder
		}).Should(HaveField("PlacedObject", cfv1alpha1.PlacedObject{Name: controlplane.DefaultBuilder, From: org}))
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))

		By("the operator restaging the org's apps")
		// Each app stages in turn: longer than cf's bound on one command.
		restaging := cfSession("restage-org", orgName)
		Eventually(restaging, 2*rollout).Should(gexec.Exit(0))
		out := string(restaging.Out.Contents())
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+InstancesRunning: web 1/1 running$`), "the started app runs its new droplet")
		Expect(out).To(HaveSuffix(fmt.Sprintf("Restaged the 2 apps of org %q.\n", orgName)))
		for _, app := range []*cfv1alpha1.CFApp{web, worker} {
			moved := getBuild(ctx, space, currentDroplet(ctx, app)())
			Expect(moved.Status.Droplet.Stack).To(Equal(newStackID), "app %s", app.Spec.DisplayName)
			Expect(moved.Status.Builder).To(Equal(buildconfig.ClusterBuilderName(org, controlplane.DefaultBuilder)))
			Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		}
		Expect(web.Spec.DesiredState).To(Equal(cfv1alpha1.StartedState))
		Expect(worker.Spec.DesiredState).To(Equal(cfv1alpha1.StoppedState), "a stopped app stays stopped")
	})

	// Both rollouts go through the orgs' own ClusterStore and ClusterLifecycle, made as the
	// seeded ones, so that they rebuild only these orgs' apps, not every app of the suite.
	Describe("rolling out a buildpack version, then a CNB lifecycle version", Ordered, func() {
		var (
			store, lifecycle string
			held, automatic  rolloutOrg
			buildpackRelease registry.Buildpack
		)

		BeforeAll(func(ctx SpecContext) {
			store, lifecycle = ownStoreAndLifecycle(ctx)
			held = newRolloutOrg(ctx, "held-", store, lifecycle)
			automatic = newRolloutOrg(ctx, "automatic-", store, lifecycle)
			By("the operator choosing the orgs' policies: Held is the default")
			Expect(cf("set-upgrade-policy", automatic.org, "Automatic")).To(ContainSubstring("buildpack upgrade policy Automatic (was Held)"))
		})

		It("holds the new buildpack version under Held until the developer restages, and deploys it under Automatic", func(ctx SpecContext) {
			before := getBuild(ctx, held.space, held.app.Spec.CurrentDropletRef.Name).Status.Droplet.Buildpacks
			var err error
			buildpackRelease, err = cp.Kpack().Registry.PublishBuildpack(ctx, buildpacks.ProcfileID, "1.0.1")
			Expect(err).NotTo(HaveOccurred())
			upgraded := ContainElement(cfv1alpha1.BuildpackVersion{ID: buildpacks.ProcfileID, Version: buildpackRelease.Version})

			By("the operator adding the release to the ClusterStore")
			Expect(k8s.Patch(ctx, &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: store}}, client.RawPatch(k8stypes.JSONPatchType,
				fmt.Appendf(nil, `[{"op":"add","path":"/spec/sources/-","value":{"image":%q}}]`, buildpackRelease.Image.Tag)))).To(Succeed())

			Eventually(func() []cfv1alpha1.BuildpackVersion { return dropletOf(ctx, automatic.app).Buildpacks }, rollout).Should(upgraded)
			Eventually(dropletCurrent(ctx, held.app), rollout).Should(HaveField("Reason", cfv1alpha1.UpgradeHeldReason))
			heldDroplet := getBuild(ctx, held.space, held.app.Status.HeldDropletRef.Name)
			Expect(heldDroplet.Status.Droplet.Buildpacks).To(upgraded)
			Expect(dropletOf(ctx, held.app).Buildpacks).To(Equal(before), "Held keeps the app on its droplet")

			By("the developer restaging the held app")
			Expect(cf("restage", "web", "-n", held.space, "--as", held.developer)).To(HavePrefix(`App "web" now runs its held droplet %s`, heldDroplet.Name))
			Expect(dropletOf(ctx, held.app).Buildpacks).To(upgraded)
			Eventually(dropletCurrent(ctx, held.app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		})

		It("holds the new lifecycle version under Held until the developer restages, and deploys it under Automatic", func(ctx SpecContext) {
			before := cp.Kpack().Images.Lifecycle.Version
			Expect(dropletOf(ctx, held.app).LifecycleVersion).To(Equal(before))
			release, after := publishLifecycle(ctx, before)

			By("the operator pointing the ClusterLifecycle at the release")
			Expect(k8s.Patch(ctx, &kpackv1alpha2.ClusterLifecycle{ObjectMeta: metav1.ObjectMeta{Name: lifecycle}}, client.RawPatch(k8stypes.MergePatchType,
				fmt.Appendf(nil, `{"spec":{"image":%q}}`, release)))).To(Succeed())

			Eventually(func() string { return dropletOf(ctx, automatic.app).LifecycleVersion }, rollout).Should(Equal(after))
			Eventually(dropletCurrent(ctx, held.app), rollout).Should(And(
				HaveField("Reason", cfv1alpha1.UpgradeHeldReason),
				HaveField("Message", ContainSubstring("lifecycle %s → %s", before, after))))
			heldDroplet := getBuild(ctx, held.space, held.app.Status.HeldDropletRef.Name)
			Expect(heldDroplet.Status.Droplet.LifecycleVersion).To(Equal(after))
			Expect(dropletOf(ctx, held.app).LifecycleVersion).To(Equal(before), "Held keeps the app on its droplet")

			By("the developer restaging the held app")
			Expect(cf("restage", "web", "-n", held.space, "--as", held.developer)).To(HavePrefix(`App "web" now runs its held droplet %s`, heldDroplet.Name))
			Expect(dropletOf(ctx, held.app).LifecycleVersion).To(Equal(after))
			Expect(dropletOf(ctx, held.app).Buildpacks).To(ContainElement(cfv1alpha1.BuildpackVersion{ID: buildpacks.ProcfileID, Version: buildpackRelease.Version}),
				"the earlier rollout stays")
		})
	})
})

// rolloutOrg is an org whose own default Builder names a given ClusterStore and ClusterLifecycle,
// with a space in which a developer pushed (without starting it) an app of the procfile
// buildpack, "web".
type rolloutOrg struct {
	org, space, developer string
	app                   *cfv1alpha1.CFApp
}

func newRolloutOrg(ctx SpecContext, prefix, store, lifecycle string) rolloutOrg {
	GinkgoHelper()
	org, space := orgWithOwnBuilder(ctx, prefix, cfv1alpha1.HeldUpgrades)
	builder := &kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: orgBuilder}}
	update(ctx, builder, func() {
		builder.Spec.Store = corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStoreKind, Name: store}
		builder.Spec.Lifecycle = corev1.ObjectReference{Kind: kpackv1alpha2.ClusterLifecycleKind, Name: lifecycle}
	})
	clusterBuilder := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: buildconfig.ClusterBuilderName(org, orgBuilder)}}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder)).To(Succeed())
		g.Expect(clusterBuilder.Spec.Store.Name).To(Equal(store))
		g.Expect(clusterBuilder.Spec.Lifecycle.Name).To(Equal(lifecycle))
		g.Expect(readyAtGeneration(clusterBuilder, clusterBuilder.Status.Status)).To(BeTrue())
	}).Should(Succeed())

	developer := "dev-" + string(uuid.NewUUID())[:8]
	spaceDeveloper(ctx, developer, space)
	DeferCleanup(func(ctx SpecContext) { cliDeleteApps(ctx, space) })
	cf("push", "web", "-n", space, "-p", sourceDir("Procfile", "web: httpd -f -p $PORT\n"), "--no-start", "--as", developer)
	o := &cfv1alpha1.CFOrg{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: org}, o)).To(Succeed())
	return rolloutOrg{org: org, space: space, developer: developer, app: appNamed(ctx, o.Spec.DisplayName, "web")}
}

// ownStoreAndLifecycle creates a ClusterStore with the seeded buildpacks and a ClusterLifecycle
// with the seeded lifecycle, as the harness's own, and waits until kpack reports them Ready.
func ownStoreAndLifecycle(ctx SpecContext) (store, lifecycle string) {
	GinkgoHelper()
	images := cp.Kpack().Images
	var sources []corev1alpha1.ImageSource
	for _, bp := range images.Buildpacks {
		sources = append(sources, corev1alpha1.ImageSource{Image: bp.Image.Tag})
	}
	name := "runbook-" + string(uuid.NewUUID())[:8]
	clusterStore := &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kpackv1alpha2.ClusterStoreSpec{Sources: sources}}
	clusterLifecycle := &kpackv1alpha2.ClusterLifecycle{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kpackv1alpha2.ClusterLifecycleSpec{ImageSource: corev1alpha1.ImageSource{Image: images.Lifecycle.Image.Tag}}}
	Expect(k8s.Create(ctx, clusterStore)).To(Succeed())
	Expect(k8s.Create(ctx, clusterLifecycle)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(clusterStore), clusterStore)).To(Succeed())
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(clusterLifecycle), clusterLifecycle)).To(Succeed())
		g.Expect(readyAtGeneration(clusterStore, clusterStore.Status.Status)).To(BeTrue())
		g.Expect(readyAtGeneration(clusterLifecycle, clusterLifecycle.Status.Status)).To(BeTrue())
	}).Should(Succeed())
	return name, name
}

// readyAtGeneration says whether kpack reports obj Ready at its generation.
func readyAtGeneration(obj client.Object, status corev1alpha1.Status) bool {
	return status.GetCondition(corev1alpha1.ConditionReady).IsTrue() && status.ObservedGeneration == obj.GetGeneration()
}

// dropletOf is what the droplet that app runs now is made of.
func dropletOf(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.BuildDropletStatus {
	GinkgoHelper()
	return getBuild(ctx, app.Namespace, currentDroplet(ctx, app)()).Status.Droplet
}

// publishLifecycle publishes the next patch release of the CNB lifecycle after version, as an
// operator publishes a lifecycle image before pointing a ClusterLifecycle at it, and returns its
// reference and version. It is the seeded lifecycle image with the lifecycle binary built again
// from the same module with the new version, which its exporter writes into every droplet (where
// kpack reads a build's lifecycle version), and with the new version in the labels from which
// kpack reads a lifecycle image's version and in /cnb/lifecycle.toml.
func publishLifecycle(ctx SpecContext, version string) (ref, next string) {
	GinkgoHelper()
	next = nextPatch(version)
	binary := filepath.Join(GinkgoT().TempDir(), "lifecycle")
	// As hack/tools.sh builds the seeded one.
	build := exec.CommandContext(ctx, "go", "build", "-C", "../hack/tools/lifecycle", "-trimpath", "-ldflags",
		"-s -w -X github.com/buildpacks/lifecycle/cmd.SCMRepository=github.com/buildpacks/lifecycle -X github.com/buildpacks/lifecycle/cmd.Version="+next,
		"-o", binary, "github.com/buildpacks/lifecycle/cmd/lifecycle")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building the lifecycle %s:\n%s", next, out)
	lifecycleBinary, err := os.ReadFile(binary)
	Expect(err).NotTo(HaveOccurred())

	seededRef, err := name.ParseReference(cp.Kpack().Images.Lifecycle.Image.Tag)
	Expect(err).NotTo(HaveOccurred())
	seeded, err := remote.Image(seededRef, remote.WithContext(ctx))
	Expect(err).NotTo(HaveOccurred())
	layers, err := seeded.Layers()
	Expect(err).NotTo(HaveOccurred())
	config, err := seeded.ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	// kpack copies the image's last layer into Builders as the lifecycle.
	last := len(layers) - 1
	descriptorVersion := func(v string) string { return fmt.Sprintf("version = %q", v) }
	lifecycleLayer := replaceFiles(layers[last], map[string]func([]byte) []byte{
		"/cnb/lifecycle/lifecycle": func([]byte) []byte { return lifecycleBinary },
		"/cnb/lifecycle.toml": func(descriptor []byte) []byte {
			Expect(string(descriptor)).To(ContainSubstring(descriptorVersion(version)))
			return []byte(strings.Replace(string(descriptor), descriptorVersion(version), descriptorVersion(next), 1))
		},
	})
	diffID, err := lifecycleLayer.DiffID()
	Expect(err).NotTo(HaveOccurred())

	config = config.DeepCopy()
	config.RootFS.DiffIDs[last] = diffID
	config.Config.Labels[cnb.LifecycleVersionLabel] = next
	var metadata map[string]map[string]any
	Expect(json.Unmarshal([]byte(config.Config.Labels[builderMetadataLabel]), &metadata)).To(Succeed())
	metadata["lifecycle"]["version"] = next
	relabelled, err := json.Marshal(metadata)
	Expect(err).NotTo(HaveOccurred())
	config.Config.Labels[builderMetadataLabel] = string(relabelled)
	release, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		append(layers[:last:last], lifecycleLayer)...)
	Expect(err).NotTo(HaveOccurred())
	release, err = mutate.ConfigFile(release, config)
	Expect(err).NotTo(HaveOccurred())

	// The registry's public prefix, which anyone (kpack too) may pull from; the operator's
	// account pushes below it.
	publisher := registry.User{Name: "lifecycle-publisher", Password: string(uuid.NewUUID()), Prefixes: []string{registry.DefaultPublicPrefix + "releases/"}}
	Expect(cp.Kpack().Registry.AddUser(publisher)).To(Succeed())
	tag, err := name.NewTag(cp.Kpack().Registry.Host() + "/" + registry.DefaultPublicPrefix + "releases/lifecycle:" + next)
	Expect(err).NotTo(HaveOccurred())
	Expect(remote.Write(tag, release, remote.WithContext(ctx),
		remote.WithAuth(&authn.Basic{Username: publisher.Name, Password: publisher.Password}))).To(Succeed())
	return tag.Name(), next
}

// builderMetadataLabel is the lifecycle image's label from which kpack reads its version.
const builderMetadataLabel = "io.buildpacks.builder.metadata"

// nextPatch is the version after a MAJOR.MINOR.PATCH version.
func nextPatch(version string) string {
	GinkgoHelper()
	i := strings.LastIndex(version, ".")
	patch, err := strconv.Atoi(version[i+1:])
	Expect(err).NotTo(HaveOccurred(), "version %q", version)
	return version[:i+1] + strconv.Itoa(patch+1)
}

// replaceFiles is layer with the content of the files named in change changed; every file it
// names must be in the layer.
func replaceFiles(layer v1.Layer, change map[string]func([]byte) []byte) v1.Layer {
	GinkgoHelper()
	contents, err := layer.Uncompressed()
	Expect(err).NotTo(HaveOccurred())
	defer contents.Close()
	var buf bytes.Buffer
	r, w := tar.NewReader(contents), tar.NewWriter(&buf)
	changed := map[string]bool{}
	for {
		header, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred())
		if f, ok := change[header.Name]; ok {
			body = f(body)
			header.Size = int64(len(body))
			changed[header.Name] = true
		}
		Expect(w.WriteHeader(header)).To(Succeed())
		_, err = w.Write(body)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(w.Close()).To(Succeed())
	Expect(changed).To(HaveLen(len(change)), "the layer holds every file to change")
	data := buf.Bytes()
	changedLayer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	Expect(err).NotTo(HaveOccurred())
	return changedLayer
}
