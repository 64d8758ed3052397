package cfapi_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// The shapes of packages, builds and droplets that the cf CLI reads.
type (
	cfPackage struct {
		GUID          string                  `json:"guid"`
		Type          string                  `json:"type"`
		State         string                  `json:"state"`
		Relationships map[string]relationship `json:"relationships"`
	}
	cfBuild struct {
		GUID    string  `json:"guid"`
		State   string  `json:"state"`
		Error   *string `json:"error"`
		Package struct {
			GUID string `json:"guid"`
		} `json:"package"`
		Droplet *struct {
			GUID string `json:"guid"`
		} `json:"droplet"`
	}
	cfDroplet struct {
		GUID         string            `json:"guid"`
		State        string            `json:"state"`
		CreatedAt    time.Time         `json:"created_at"`
		Stack        string            `json:"stack"`
		Image        string            `json:"image"`
		ProcessTypes map[string]string `json:"process_types"`
		Buildpacks   []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"buildpacks"`
	}
	envelopes struct {
		Envelopes struct {
			Batch []struct {
				Timestamp string            `json:"timestamp"`
				SourceID  string            `json:"source_id"`
				Tags      map[string]string `json:"tags"`
				Log       struct {
					Payload []byte `json:"payload"`
					Type    string `json:"type"`
				} `json:"log"`
			} `json:"batch"`
		} `json:"envelopes"`
	}
)

// zipEntry is a file of a zip as the cf CLI zips an app's directory: directories end in "/", a
// symbolic link holds its target.
type zipEntry struct {
	name    string
	mode    fs.FileMode
	content string
}

func zipOf(entries ...zipEntry) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		hdr.SetMode(e.mode)
		f, err := w.CreateHeader(hdr)
		Expect(err).NotTo(HaveOccurred())
		_, err = io.WriteString(f, e.content)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(w.Close()).To(Succeed())
	return buf.Bytes()
}

// upload sends bits as the cf CLI uploads a package (cli:api/cloudcontroller/ccv3/package.go):
// multipart, the matched resources (none) in the field resources, the zip in the file bits.
func (u user) upload(ctx context.Context, pkg string, bits []byte) response {
	GinkgoHelper()
	return u.uploadTo(ctx, api, pkg, bits)
}

// uploadTo is upload to the API at base.
func (u user) uploadTo(ctx context.Context, base, pkg string, bits []byte) response {
	GinkgoHelper()
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	Expect(form.WriteField("resources", "[]")).To(Succeed())
	part, err := form.CreateFormFile("bits", "package.zip")
	Expect(err).NotTo(HaveOccurred())
	_, err = part.Write(bits)
	Expect(err).NotTo(HaveOccurred())
	Expect(form.Close()).To(Succeed())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v3/packages/"+pkg+"/upload", &body)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", form.FormDataContentType())
	req.Header.Set("Authorization", u.authorization)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func packageBody(app string) map[string]any {
	return map[string]any{"type": "bits", "relationships": map[string]any{"app": map[string]any{"data": map[string]string{"guid": app}}}}
}

// layerEntries lists the one layer of an image: each entry's name, mode and content or target.
func layerEntries(ref string, auth authn.Authenticator) []string {
	GinkgoHelper()
	parsed, err := name.ParseReference(ref)
	Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(parsed, remote.WithAuth(auth))
	Expect(err).NotTo(HaveOccurred())
	layers, err := img.Layers()
	Expect(err).NotTo(HaveOccurred())
	Expect(layers).To(HaveLen(1))
	content, err := layers[0].Uncompressed()
	Expect(err).NotTo(HaveOccurred())
	defer content.Close()
	var entries []string
	r := tar.NewReader(content)
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(hdr.ModTime.Equal(cf.SourceModTime)).To(BeTrue(), hdr.Name)
		body, err := io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred())
		if hdr.Typeflag == tar.TypeSymlink {
			entries = append(entries, fmt.Sprintf("%s -> %s", hdr.Name, hdr.Linkname))
			continue
		}
		entries = append(entries, fmt.Sprintf("%s %o %s", hdr.Name, hdr.Mode, body))
	}
}

var _ = Describe("staging: cf push's and cf restage's packages, builds, droplets and staging lines", Ordered, func() {
	var (
		reg        *registry.Registry
		org, space string
		developer  user
		repository string
		account    *authn.Basic
		app        *cfv1alpha1.CFApp
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		reg, err = registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		org, space, developer = developedSpace(ctx, "staging-org-manager", "staging")
		repository, account = cftest.PlaceRegistry(ctx, k8s, reg, org, space)
		app = cftest.CreateApp(ctx, k8s, space, "web", cfv1alpha1.StoppedState)
	})

	// createPackage creates a package of the app as the developer and returns its GUID.
	createPackage := func(ctx context.Context) string {
		GinkgoHelper()
		pkg := decode[cfPackage](developer.post(ctx, "/v3/packages", packageBody(app.Name)), http.StatusCreated)
		Expect(pkg.State).To(Equal("AWAITING_UPLOAD"))
		return pkg.GUID
	}

	It("uploads the cf CLI's zip as the package image kubectl cf makes, in the space's registry, and the package is READY", func(ctx SpecContext) {
		pkg := decode[cfPackage](developer.post(ctx, "/v3/packages", packageBody(app.Name)), http.StatusCreated)
		Expect(pkg.Type).To(Equal("bits"))
		Expect(pkg.State).To(Equal("AWAITING_UPLOAD"))
		Expect(pkg.Relationships["app"].Data.GUID).To(Equal(app.Name))
		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg.GUID), http.StatusOK).State).To(Equal("AWAITING_UPLOAD"))

		uploaded := decode[cfPackage](developer.upload(ctx, pkg.GUID, zipOf(
			zipEntry{"bin/", fs.ModeDir | 0o755, ""},
			zipEntry{"bin/run", 0o755, "#!/bin/sh\n"},
			zipEntry{"Procfile", 0o644, "web: bin/run\n"},
			zipEntry{"start", fs.ModeSymlink | 0o777, "bin/run"},
		)), http.StatusOK)
		Expect(uploaded.State).To(Equal("READY"))

		stored := &cfv1alpha1.CFPackage{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: pkg.GUID}, stored)).To(Succeed())
		image := stored.Spec.Source.Registry.Image
		Expect(image).To(HavePrefix(cfv1alpha1.PackageRepository(repository, app.Name) + "@sha256:"))
		Expect(stored.Spec.Source.Registry.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: cfv1alpha1.RegistrySecretName(cfv1alpha1.OrgLevel)}))
		pusher, ok := reg.PushedBy(image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(account.Username), "pushed with the space's credentials")
		Expect(layerEntries(image, account)).To(Equal([]string{
			"bin/ 755 ", "bin/run 755 #!/bin/sh\n", "Procfile 644 web: bin/run\n", "start -> bin/run",
		}))

		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg.GUID), http.StatusOK).State).To(Equal("READY"))
		By("cf restage finds the app's newest READY package")
		newest := createPackage(ctx)
		ready := decode[list](developer.get(ctx, "/v3/packages?app_guids="+app.Name+"&states=READY&order_by=-created_at&per_page=1&page=1"), http.StatusOK)
		Expect(ready.Resources).To(HaveLen(1))
		Expect(ready.Resources[0].GUID).To(Equal(pkg.GUID))
		all := decode[list](developer.get(ctx, "/v3/packages?app_guids="+app.Name), http.StatusOK)
		Expect(all.Pagination.TotalResults).To(Equal(2))
		Expect(decode[list](developer.get(ctx, "/v3/packages?guids="+newest+"&app_guids="+app.Name), http.StatusOK).Resources).To(HaveLen(1))

		By("a second upload of the same package is refused")
		again := cfErrorOf(developer.upload(ctx, pkg.GUID, zipOf(zipEntry{"Procfile", 0o644, "web: x\n"})), http.StatusUnprocessableEntity)
		Expect(again.Detail).To(ContainSubstring("has its bits already"))
	})

	It("stages uploads in the scratch space within its budget: one that finds no room gets 503 with Retry-After, and nothing stays on disk", func(ctx SpecContext) {
		scratchDir := GinkgoT().TempDir()
		// Deflated, the zip is small; its layer holds the file whole, past the budget.
		bits := zipOf(zipEntry{"Procfile", 0o644, "web: x\n"}, zipEntry{"public/big.txt", 0o644, strings.Repeat("x", 64<<10)})
		small, _ := startAPI(ctx, func(c *cfapi.Config) { c.ScratchDir, c.ScratchBytes = scratchDir, 16<<10 })
		pkg := createPackage(ctx)
		refused := developer.uploadTo(ctx, small, pkg, bits)
		Expect(refused.header.Get("Retry-After")).To(Equal("30"))
		Expect(cfErrorOf(refused, http.StatusServiceUnavailable)).To(And(HaveField("Code", 10015), HaveField("Title", "CF-ServiceUnavailable"),
			HaveField("Detail", ContainSubstring("may hold at most 16384 bytes on disk at once (cf-api --scratch-size)"))))
		Expect(os.ReadDir(scratchDir)).To(BeEmpty(), "nothing of the refused upload stays")
		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg), http.StatusOK).State).To(Equal("AWAITING_UPLOAD"))

		By("with room for it, the same upload is READY, and leaves nothing on disk either")
		roomy, _ := startAPI(ctx, func(c *cfapi.Config) { c.ScratchDir, c.ScratchBytes = scratchDir, 1<<20 })
		Expect(decode[cfPackage](developer.uploadTo(ctx, roomy, pkg, bits), http.StatusOK).State).To(Equal("READY"))
		Expect(os.ReadDir(scratchDir)).To(BeEmpty())

		By("a scratch directory that cannot hold uploads is a clear error, not an unknown one")
		notADir := filepath.Join(scratchDir, "not-a-directory")
		Expect(os.WriteFile(notADir, nil, 0o600)).To(Succeed())
		broken, _ := startAPI(ctx, func(c *cfapi.Config) { c.ScratchDir = notADir })
		Expect(cfErrorOf(developer.uploadTo(ctx, broken, createPackage(ctx), bits), http.StatusServiceUnavailable).Detail).To(
			HavePrefix("The CF API cannot stage uploads in its scratch directory " + notADir + " (cf-api --scratch-dir)"))
	})

	It("refuses a zip whose entries climb out of the app's directory, and keeps the package waiting for its bits", func(ctx SpecContext) {
		pkg := createPackage(ctx)
		refused := cfErrorOf(developer.upload(ctx, pkg, zipOf(zipEntry{"Procfile", 0o644, "web: x\n"}, zipEntry{"../../etc/cron.d/evil", 0o644, "* * * * * root sh\n"})),
			http.StatusUnprocessableEntity)
		Expect(refused).To(Equal(cfError{Code: 150001, Title: "CF-AppPackageInvalid",
			Detail: `The app package is invalid: invalid package zip: entry "../../etc/cron.d/evil" lies outside the app's directory`}))
		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg), http.StatusOK).State).To(Equal("AWAITING_UPLOAD"))

		notZip := cfErrorOf(developer.upload(ctx, pkg, []byte("not a zip")), http.StatusUnprocessableEntity)
		Expect(notZip.Detail).To(HavePrefix("The app package is invalid: the field bits is not a zip"))
	})

	It("maps a build's Succeeded condition to STAGING, STAGED with its droplet, and FAILED with its message", func(ctx SpecContext) {
		pkg := createPackage(ctx)
		Expect(developer.upload(ctx, pkg, zipOf(zipEntry{"Procfile", 0o644, "web: x\n"})).status).To(Equal(http.StatusOK))

		By("cf push creates the build with the package only, and polls it")
		build := decode[cfBuild](developer.post(ctx, "/v3/builds", map[string]any{"package": map[string]string{"guid": pkg}}), http.StatusCreated)
		Expect(build.State).To(Equal("STAGING"))
		Expect(build.Package.GUID).To(Equal(pkg))
		stored := &cfv1alpha1.CFBuild{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: build.GUID}, stored)).To(Succeed())
		Expect(stored.Spec.AppRef.Name).To(Equal(app.Name))
		Expect(stored.Spec.PackageRef.Name).To(Equal(pkg))
		Expect(stored.Spec.Lifecycle).To(Equal(cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}), "the app's lifecycle")

		By("waiting for what the space lacks (cf-hnc's reconciler says so), the build is STAGING")
		Eventually(func() *metav1.Condition {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: build.GUID}, stored)).To(Succeed())
			return meta.FindStatusCondition(stored.Status.Conditions, cfv1alpha1.SucceededCondition)
		}).ShouldNot(BeNil())
		waiting := decode[cfBuild](developer.get(ctx, "/v3/builds/"+build.GUID), http.StatusOK)
		Expect(waiting.State).To(Equal("STAGING"))
		Expect(waiting.Droplet).To(BeNil())
		Expect(cfErrorOf(developer.get(ctx, "/v3/droplets/"+build.GUID), http.StatusNotFound).Detail).To(Equal("Droplet not found"))

		By("staged")
		cftest.FinishBuild(ctx, k8s, space, build.GUID, metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionTrue,
			Reason: cfv1alpha1.BuildSucceededReason, Message: "droplet"}, &cfv1alpha1.BuildDropletStatus{
			Registry:     cfv1alpha1.Registry{Image: repository + "/" + app.Name + "@sha256:" + strings.Repeat("a", 64)},
			Stack:        "io.cf-hnc.stacks.test",
			Buildpacks:   []cfv1alpha1.BuildpackVersion{{ID: "cf-hnc/procfile", Version: "1.2.3"}},
			ProcessTypes: []cfv1alpha1.ProcessType{{Type: "web", Command: "bin/run"}},
		})
		staged := decode[cfBuild](developer.get(ctx, "/v3/builds/"+build.GUID), http.StatusOK)
		Expect(staged.State).To(Equal("STAGED"))
		Expect(staged.Droplet).NotTo(BeNil())
		Expect(staged.Droplet.GUID).To(Equal(build.GUID))
		droplet := decode[cfDroplet](developer.get(ctx, "/v3/droplets/"+staged.Droplet.GUID), http.StatusOK)
		Expect(droplet.GUID).To(Equal(build.GUID))
		Expect(droplet.State).To(Equal("STAGED"))
		Expect(droplet.CreatedAt).NotTo(BeZero())
		Expect(droplet.Stack).To(Equal("io.cf-hnc.stacks.test"))
		Expect(droplet.Image).To(Equal(repository + "/" + app.Name + "@sha256:" + strings.Repeat("a", 64)))
		Expect(droplet.ProcessTypes).To(Equal(map[string]string{"web": "bin/run"}))
		Expect(droplet.Buildpacks).To(HaveLen(1))
		Expect(droplet.Buildpacks[0].Name).To(Equal("cf-hnc/procfile"))
		Expect(droplet.Buildpacks[0].Version).To(Equal("1.2.3"))

		By("the app runs no droplet until it is assigned: the summary's exact 404")
		Expect(cfErrorOf(developer.get(ctx, "/v3/apps/"+app.Name+"/droplets/current"), http.StatusNotFound)).To(Equal(
			cfError{Code: 10010, Title: "CF-ResourceNotFound", Detail: "Droplet not found"}))
		current := app.DeepCopy()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), current)).To(Succeed())
		patch := client.MergeFrom(current.DeepCopy())
		current.Spec.CurrentDropletRef.Name = build.GUID
		Expect(k8s.Patch(ctx, current, patch)).To(Succeed())
		Expect(decode[cfDroplet](developer.get(ctx, "/v3/apps/"+app.Name+"/droplets/current"), http.StatusOK).GUID).To(Equal(build.GUID))

		By("failed, with the condition's message as the build's error")
		failedBuild := decode[cfBuild](developer.post(ctx, "/v3/builds", map[string]any{"package": map[string]string{"guid": pkg}}), http.StatusCreated)
		const why = "kpack build x failed in step detect (exit code 20): ERROR: No buildpack groups passed detection."
		cftest.FinishBuild(ctx, k8s, space, failedBuild.GUID, metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
			Reason: cfv1alpha1.BuildFailedReason, Message: why}, nil)
		failed := decode[cfBuild](developer.get(ctx, "/v3/builds/"+failedBuild.GUID), http.StatusOK)
		Expect(failed.State).To(Equal("FAILED"))
		Expect(failed.Error).To(HaveValue(Equal(why)))
		Expect(failed.Droplet).To(BeNil())
		Expect(cfErrorOf(developer.get(ctx, "/v3/droplets/"+failedBuild.GUID), http.StatusNotFound).Detail).To(Equal("Droplet not found"))
		Expect(decode[list](developer.get(ctx, "/v3/apps/"+app.Name+"/droplets"), http.StatusOK).Resources).To(
			ConsistOf(HaveField("GUID", build.GUID)))

		By("cf start and cf restart: the STAGED droplets of the newest package, which they stage if it has none")
		Expect(decode[list](developer.get(ctx, "/v3/packages/"+pkg+"/droplets?states=STAGED&per_page=1&page=1"), http.StatusOK).Resources).To(
			ConsistOf(HaveField("GUID", build.GUID)))
		Expect(decode[list](developer.get(ctx, "/v3/packages/"+pkg+"/droplets?states=FAILED"), http.StatusOK).Resources).To(BeEmpty())
		Expect(decode[list](developer.get(ctx, "/v3/packages/"+createPackage(ctx)+"/droplets?states=STAGED&per_page=1&page=1"), http.StatusOK).Resources).
			To(BeEmpty())

		By("an app whose current droplet names a build without one has no current droplet")
		patch = client.MergeFrom(current.DeepCopy())
		current.Spec.CurrentDropletRef.Name = failedBuild.GUID
		Expect(k8s.Patch(ctx, current, patch)).To(Succeed())
		Expect(cfErrorOf(developer.get(ctx, "/v3/apps/"+app.Name+"/droplets/current"), http.StatusNotFound).Detail).To(Equal("Droplet not found"))
	})

	It("refuses a build of a package without bits", func(ctx SpecContext) {
		pkg := createPackage(ctx)
		refused := cfErrorOf(developer.post(ctx, "/v3/builds", map[string]any{"package": map[string]string{"guid": pkg}}), http.StatusUnprocessableEntity)
		Expect(refused.Detail).To(Equal("Package " + pkg + " has no bits yet: upload them before staging it"))
	})

	It("hides the space's packages and builds from a non-member, and refuses a member's writes that RBAC refuses", func(ctx SpecContext) {
		pkg := createPackage(ctx)
		build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}, PackageRef: corev1.LocalObjectReference{Name: pkg},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, build)).To(Succeed())

		stranger := newUser(ctx, "stranger")
		Expect(cfErrorOf(stranger.post(ctx, "/v3/packages", packageBody(app.Name)), http.StatusUnprocessableEntity).Detail).To(
			Equal("Unable to use app. Ensure that the app exists and you have access to it."))
		Expect(cfErrorOf(stranger.get(ctx, "/v3/packages/"+pkg), http.StatusNotFound).Detail).To(Equal("Package not found"))
		Expect(cfErrorOf(stranger.upload(ctx, pkg, zipOf(zipEntry{"Procfile", 0o644, "web: x\n"})), http.StatusNotFound).Detail).To(Equal("Package not found"))
		Expect(cfErrorOf(stranger.get(ctx, "/v3/builds/"+build.Name), http.StatusNotFound).Detail).To(Equal("Build not found"))
		Expect(cfErrorOf(stranger.get(ctx, "/v3/apps/"+app.Name+"/droplets/current"), http.StatusNotFound).Detail).To(Equal("App not found"))
		Expect(decode[list](stranger.get(ctx, "/v3/packages?app_guids="+app.Name), http.StatusOK).Resources).To(BeEmpty())

		By("a space auditor sees the package, but may neither create one nor read the registry credentials to upload")
		auditor := newUser(ctx, "auditor")
		bind(ctx, space, "cf-space-auditor", auditor.Subject())
		Eventually(func() int { return auditor.get(ctx, "/v3/packages/"+pkg).status }).Should(Equal(http.StatusOK))
		Expect(cfErrorOf(auditor.post(ctx, "/v3/packages", packageBody(app.Name)), http.StatusForbidden).Title).To(Equal("CF-NotAuthorized"))
		Expect(cfErrorOf(auditor.upload(ctx, pkg, zipOf(zipEntry{"Procfile", 0o644, "web: x\n"})), http.StatusForbidden).Title).To(Equal("CF-NotAuthorized"))
		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg), http.StatusOK).State).To(Equal("AWAITING_UPLOAD"))
	})

	It("serves the build pods' step lines as log-cache envelopes tagged STG, from start_time on", func(ctx SpecContext) {
		t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
		at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "build-pod-" + string(uuid.NewUUID())[:8], Labels: map[string]string{cfv1alpha1.AppLabel: app.Name}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "prepare", Image: "x"}, {Name: "detect", Image: "x"}},
				Containers:     []corev1.Container{{Name: "completion", Image: "x"}},
			},
		}
		Eventually(func() error { return k8s.Create(ctx, pod) }).Should(Succeed(), "once the namespace's default ServiceAccount exists")
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{
			{Name: "prepare", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at(0), FinishedAt: at(1)}}},
			{Name: "detect", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at(2), FinishedAt: at(3), ExitCode: 20,
				Message: "ERROR: No buildpack groups passed detection.\nERROR: failed to detect\n"}}},
		}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())

		read := func(query string) []string {
			GinkgoHelper()
			var lines []string
			for _, e := range decode[envelopes](developer.get(ctx, "/api/v1/read/"+app.Name+"?"+query), http.StatusOK).Envelopes.Batch {
				Expect(e.Tags).To(HaveKeyWithValue("source_type", "STG"))
				Expect(e.SourceID).To(Equal(app.Name))
				ns, err := strconv.ParseInt(e.Timestamp, 10, 64)
				Expect(err).NotTo(HaveOccurred())
				lines = append(lines, fmt.Sprintf("%d %s %s", time.Unix(0, ns).Sub(t0)/time.Second, e.Log.Type, e.Log.Payload))
			}
			return lines
		}
		Expect(read("envelope_types=LOG")).To(Equal([]string{
			"0 OUT prepare: started", "1 OUT prepare: done", "2 OUT detect: started",
			"3 ERR detect: failed with exit code 20", "3 ERR ERROR: No buildpack groups passed detection.", "3 ERR ERROR: failed to detect",
		}))
		By("the cf CLI's first read: the newest envelope")
		Expect(read("envelope_types=LOG&limit=1&descending=true")).To(Equal([]string{"3 ERR ERROR: failed to detect"}))
		By("its next reads, from just after the last envelope it got")
		Expect(read(fmt.Sprintf("envelope_types=LOG&start_time=%d", at(1).Add(time.Nanosecond).UnixNano()))).To(Equal([]string{
			"2 OUT detect: started", "3 ERR detect: failed with exit code 20",
			"3 ERR ERROR: No buildpack groups passed detection.", "3 ERR ERROR: failed to detect",
		}))
		Expect(read(fmt.Sprintf("envelope_types=LOG&start_time=%d", at(3).Add(time.Nanosecond).UnixNano()))).To(BeEmpty())
		Expect(read("envelope_types=GAUGE")).To(BeEmpty())

		Expect(cfErrorOf(newUser(ctx, "stranger").get(ctx, "/api/v1/read/"+app.Name), http.StatusNotFound).Detail).To(Equal("App not found"))
	})
})

var _ = Describe("a droplet's stack", func() {
	// clusterStack makes a ClusterStack of a stack id, with the run image that kpack resolved for
	// it in its status (no kpack runs in this suite), deletes it after the spec, and returns its
	// name.
	clusterStack := func(ctx SpecContext, id, runImage string) string {
		GinkgoHelper()
		stack := &kpackv1alpha2.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: unique("stack")}, Spec: kpackv1alpha2.ClusterStackSpec{Id: id}}
		Expect(k8s.Create(ctx, stack)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, stack)).To(Succeed()) })
		stack.Status.ResolvedClusterStack = kpackv1alpha2.ResolvedClusterStack{Id: id, RunImage: kpackv1alpha2.ClusterStackStatusImage{LatestImage: runImage}}
		Expect(k8s.Status().Update(ctx, stack)).To(Succeed())
		return stack.Name
	}
	digest := func(c string) string { return "@sha256:" + strings.Repeat(c, 64) }

	It("is the name of the ClusterStack it was built on, which cf stacks lists and cf push -s takes, also when ClusterStacks share its stack id", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "stack-reader", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: stacked\n")
		sharedID, loneID := "io.cf-hnc.stacks."+unique("shared"), "io.cf-hnc.stacks."+unique("lone")
		base := clusterStack(ctx, sharedID, "registry.example/stacks/base/run"+digest("1"))
		full := clusterStack(ctx, sharedID, "registry.example/stacks/full/run"+digest("2"))
		lone := clusterStack(ctx, loneID, "registry.example/stacks/lone/run"+digest("3"))
		Expect(names(decode[list](developer.get(ctx, "/v3/stacks"), http.StatusOK))).To(ContainElements(base, full, lone))

		// kpack names the run image from the Builder's repository: the digest says which stack's it is.
		onFull := cftest.StagedDropletOn(ctx, k8s, space, guid, sharedID, "registry.example/builders/web/run"+digest("2"))
		setDroplet(ctx, developer, guid, onFull)
		Expect(decode[cfDroplet](developer.get(ctx, "/v3/apps/"+guid+"/droplets/current"), http.StatusOK).Stack).To(Equal(full), "cf app's stack:")
		Expect(decode[cfDroplet](developer.get(ctx, "/v3/droplets/"+onFull), http.StatusOK).Stack).To(Equal(full))

		By("the only ClusterStack of a stack id, whose run image has moved on since")
		onLone := cftest.StagedDropletOn(ctx, k8s, space, guid, loneID, "registry.example/stacks/lone/run"+digest("4"))
		Expect(decode[cfDroplet](developer.get(ctx, "/v3/droplets/"+onLone), http.StatusOK).Stack).To(Equal(lone))

		By("ClusterStacks that share the stack id, neither with the droplet's run image: the stack id, not a guess")
		onEither := cftest.StagedDropletOn(ctx, k8s, space, guid, sharedID, "registry.example/stacks/old/run"+digest("5"))
		Expect(decode[cfDroplet](developer.get(ctx, "/v3/droplets/"+onEither), http.StatusOK).Stack).To(Equal(sharedID))

		droplets := decode[listOf[cfDroplet]](developer.get(ctx, "/v3/apps/"+guid+"/droplets"), http.StatusOK).Resources
		Expect(droplets).To(ConsistOf(
			And(HaveField("GUID", onFull), HaveField("Stack", full)),
			And(HaveField("GUID", onLone), HaveField("Stack", lone)),
			And(HaveField("GUID", onEither), HaveField("Stack", sharedID))))
	})
})
