package standinkubelet

import (
	"archive/tar"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"encoding/json"
	"errors"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// filesOf lists a layer's entries with the contents of its regular files.
func filesOf(layer v1.Layer) map[string]string {
	rc, err := layer.Uncompressed()
	Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		Expect(err).NotTo(HaveOccurred())
		content, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		Expect(hdr.ModTime.UTC()).To(Equal(normalizedTime))
		files[hdr.Name] = string(content)
	}
}

func labelsOf(img v1.Image) map[string]string {
	cfg, err := img.ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	return cfg.Config.Labels
}

func diffIDs(img v1.Image) []v1.Hash {
	cfg, err := img.ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	return cfg.RootFS.DiffIDs
}

var _ = Describe("appLayer", func() {
	source := sourceFixture(map[string]string{"Procfile": "web: ./app", "app.rb": "puts 1", "api/Procfile": "web: ./api", "api/main.go": "package main"})

	It("puts the source under /workspace and finds its Procfile", func() {
		layer, procfile, root, err := appLayer(source, "")

		Expect(err).NotTo(HaveOccurred())
		Expect(string(procfile)).To(Equal("web: ./app"))
		Expect(root).To(ConsistOf("Procfile", "app.rb"), "the names detection reads")
		Expect(filesOf(layer)).To(Equal(map[string]string{
			"workspace/": "", "workspace/Procfile": "web: ./app", "workspace/app.rb": "puts 1",
			"workspace/api/Procfile": "web: ./api", "workspace/api/main.go": "package main",
		}))
	})

	It("takes only the source's subPath", func() {
		layer, procfile, _, err := appLayer(source, "api/")

		Expect(err).NotTo(HaveOccurred())
		Expect(string(procfile)).To(Equal("web: ./api"))
		Expect(filesOf(layer)).To(Equal(map[string]string{"workspace/": "", "workspace/Procfile": "web: ./api", "workspace/main.go": "package main"}))
	})

	It("is the same layer for the same source", func() {
		first, _, _, err := appLayer(source, "")
		Expect(err).NotTo(HaveOccurred())
		second, _, _, err := appLayer(sourceFixture(map[string]string{"Procfile": "web: ./app", "app.rb": "puts 1", "api/Procfile": "web: ./api", "api/main.go": "package main"}), "")
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Digest()).To(Equal(must(second.Digest())))
	})
})

var _ = Describe("exporting, rebasing and reading back an app image", func() {
	const (
		runRepo   = "127.0.0.1:5000/builder-run-image"
		appTag    = "127.0.0.1:5000/apps/app"
		sourceRef = "127.0.0.1:5000/sources/app@sha256:0123456789012345678901234567890123456789012345678901234567890123"
	)
	var (
		run      v1.Image
		runRef   string
		exp      export
		exported v1.Image
	)

	BeforeEach(func() {
		run = runImageFixture(testStack, "1")
		runRef = runRepo + "@" + must(run.Digest()).String()
		app, procfile, files, err := appLayer(sourceFixture(map[string]string{"Procfile": "web: ./app\nworker: ./work"}), "")
		Expect(err).NotTo(HaveOccurred())
		found, err := detect(builderFixture(runRepo), files)
		Expect(err).NotTo(HaveOccurred())
		procs, err := processes(procfile, found.buildpacks)
		Expect(err).NotTo(HaveOccurred())
		exp = export{
			run: run, runImage: runRef, app: app, detected: found, processes: procs,
			platformAPI: "0.9", source: must(name.NewDigest(sourceRef)),
		}
		exported, err = exp.image()
		Expect(err).NotTo(HaveOccurred())
	})

	It("exports the run image's layers, the app layer, and the lifecycle's labels", func() {
		Expect(diffIDs(exported)[:2]).To(Equal(diffIDs(run)))
		Expect(diffIDs(exported)).To(HaveLen(3))

		labels := labelsOf(exported)
		Expect(labels).To(HaveKeyWithValue(cnb.StackIDLabel, testStack))
		var lifecycle lifecycleMetadata
		Expect(json.Unmarshal([]byte(labels[cnb.LifecycleMetadataLabel]), &lifecycle)).To(Succeed())
		Expect(lifecycle.RunImage).To(Equal(runImageForRebase{TopLayer: diffIDs(run)[1].String(), Reference: runRef}))
		Expect(lifecycle.Stack.RunImage.Image).To(Equal(runRepo))
		Expect(lifecycle.App).To(Equal([]layerSHA{{SHA: diffIDs(exported)[2].String()}}))

		var build buildMetadata
		Expect(json.Unmarshal([]byte(labels[cnb.BuildMetadataLabel]), &build)).To(Succeed())
		Expect(build.Buildpacks).To(Equal(expectedBuildpacks))
		Expect(build.Launcher.Version).To(Equal(testLifecycleVersion))
		Expect(build.Processes).To(Equal([]process{
			{Type: "web", Command: "./app", Default: true, BuildpackID: "cf/procfile"},
			{Type: "worker", Command: "./work", BuildpackID: "cf/procfile"},
		}))
		Expect(build.DefaultProcessType).To(Equal("web"))
		Expect(labels[cnb.ProjectMetadataLabel]).To(MatchJSON(`{"source":{"type":"image","metadata":{"image":"127.0.0.1:5000/sources/app"},"version":{"digest":"sha256:0123456789012345678901234567890123456789012345678901234567890123"}}}`))

		cfg := must(exported.ConfigFile())
		Expect(cfg.Config.Entrypoint).To(Equal([]string{"/cnb/process/web"}))
		Expect(cfg.Config.Env).To(ContainElements("PATH=/usr/bin", "CNB_PLATFORM_API=0.9"))
		Expect(cfg.Created.Time).To(Equal(normalizedTime))
	})

	It("exports the same digest for the same inputs", func() {
		again, err := exp.image()
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Digest()).To(Equal(must(exported.Digest())))
	})

	It("makes the exporter's -process-type the default, and refuses one that does not exist", func() {
		exp.defaultProcess = "worker"
		img, err := exp.image()
		Expect(err).NotTo(HaveOccurred())
		Expect(must(img.ConfigFile()).Config.Entrypoint).To(Equal([]string{"/cnb/process/worker"}))

		exp.defaultProcess = "missing"
		_, err = exp.image()
		Expect(err).To(MatchError(ContainSubstring(`"missing" not present`)))
	})

	It("reads back what kpack's completion binary reports", func() {
		identifier := appTag + "@" + must(exported.Digest()).String()

		metadata, err := readBuildMetadata(exported, identifier)

		Expect(err).NotTo(HaveOccurred())
		Expect(metadata).To(Equal(kpackBuildMetadata{
			BuildpackMetadata: expectedBuildpacks,
			LatestImage:       identifier,
			StackID:           testStack,
			StackRunImage:     runRef,
			LifecycleVersion:  testLifecycleVersion,
		}))
	})

	It("rebases the app's own layers onto a new run image of the same stack", func() {
		newRun := runImageFixture(testStack, "2")
		newRunRef := runRepo + "@" + must(newRun.Digest()).String()

		rebased, err := rebase(exported, newRun, newRunRef)

		Expect(err).NotTo(HaveOccurred())
		Expect(diffIDs(rebased)).To(Equal(append(diffIDs(newRun), diffIDs(exported)[2])))
		labels := labelsOf(rebased)
		Expect(labels).To(HaveKeyWithValue(cnb.StackLabelPrefix+"version", "2"))
		Expect(labels[cnb.BuildMetadataLabel]).To(Equal(labelsOf(exported)[cnb.BuildMetadataLabel]))
		metadata, err := readBuildMetadata(rebased, appTag+"@"+must(rebased.Digest()).String())
		Expect(err).NotTo(HaveOccurred())
		Expect(metadata.StackRunImage).To(Equal(newRunRef))
		Expect(metadata.BuildpackMetadata).To(Equal(expectedBuildpacks))
		Expect(must(rebased.ConfigFile()).Config.Entrypoint).To(Equal([]string{"/cnb/process/web"}))
	})

	It("refuses a run image of another stack, as the lifecycle's rebaser does", func() {
		_, err := rebase(exported, runImageFixture("io.cf.other", "2"), runRepo+":other")
		Expect(err).To(MatchError("incompatible stack: 'io.cf.other' is not compatible with '" + testStack + "'"))
	})
})
