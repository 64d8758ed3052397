package staging

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

// A tenant's build step runs with the lifecycle's rights and can write any process list into
// the droplet's build metadata label (review 3, N11): the manager reads only a bounded
// configuration, and takes only a bounded list.
var _ = Describe("Reading a droplet's process types from its registry", func() {
	var (
		host         string
		configsRead  atomic.Int32
		pushDroplet  func(buildMetadata string) string
		readDroplets = RegistryDropletReader{}
	)

	BeforeEach(func() {
		registry := ggcrregistry.New()
		configsRead.Store(0)
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				configsRead.Add(1) // a droplet without layers: its one blob is its configuration
			}
			registry.ServeHTTP(w, r)
		}))
		DeferCleanup(server.Close)
		host = strings.TrimPrefix(server.URL, "http://")
		pushDroplet = func(buildMetadata string) string {
			GinkgoHelper()
			img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Config: v1.Config{Labels: map[string]string{cnb.BuildMetadataLabel: buildMetadata}}})
			Expect(err).NotTo(HaveOccurred())
			digest, err := img.Digest()
			Expect(err).NotTo(HaveOccurred())
			ref, err := name.ParseReference(host+"/org/space/app@"+digest.String(), name.Insecure)
			Expect(err).NotTo(HaveOccurred())
			Expect(remote.Write(ref, img)).To(Succeed())
			configsRead.Store(0)
			return ref.String()
		}
	})

	metadata := func(processes []cnb.Process) string {
		type process struct {
			Type    string   `json:"type"`
			Command []string `json:"command"`
		}
		list := make([]process, len(processes))
		for i, p := range processes {
			list[i] = process{Type: p.Type, Command: []string{p.Command}}
		}
		out, err := json.Marshal(map[string]any{"processes": list})
		Expect(err).NotTo(HaveOccurred())
		return string(out)
	}

	It("reads a Procfile's processes", func(ctx SpecContext) {
		droplet := pushDroplet(metadata([]cnb.Process{{Type: "web", Command: "node server.js"}}))
		Expect(readDroplets.ProcessTypes(ctx, droplet, authn.DefaultKeychain)).To(Equal([]cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}}))
		Expect(configsRead.Load()).To(BeEquivalentTo(1))
	})

	It("does not fetch a configuration of more than 1 MiB", func(ctx SpecContext) {
		droplet := pushDroplet(metadata([]cnb.Process{{Type: "web", Command: strings.Repeat("x", 2<<20)}}))
		_, err := readDroplets.ProcessTypes(ctx, droplet, authn.DefaultKeychain)
		Expect(err).To(MatchError(ErrDropletInvalid))
		Expect(err).To(MatchError(MatchRegexp(`its image configuration has \d+ bytes; cf-hnc reads at most 1048576`)))
		Expect(configsRead.Load()).To(BeZero())
	})

	DescribeTable("takes no process list beyond the bounds",
		func(ctx SpecContext, processes []cnb.Process, message string) {
			_, err := readDroplets.ProcessTypes(ctx, pushDroplet(metadata(processes)), authn.DefaultKeychain)
			Expect(err).To(MatchError(ErrDropletInvalid))
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("10,000 process types", manyProcesses(10_000), "the droplet declares 10000 process types; at most 32 are allowed"),
		Entry("a command of 512 KiB", []cnb.Process{{Type: "web", Command: strings.Repeat("x", 512<<10)}},
			`the command of the droplet's process type "web" has 524288 characters; at most 4096 are allowed`),
	)
})

func manyProcesses(n int) []cnb.Process {
	processes := make([]cnb.Process, n)
	for i := range processes {
		processes[i] = cnb.Process{Type: fmt.Sprintf("worker-%d", i), Command: "./worker"}
	}
	return processes
}
