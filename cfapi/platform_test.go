package cfapi_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("GET /v3/info", func() {
	It("answers without credentials", func(ctx SpecContext) {
		info := decode[struct {
			Name  string          `json:"name"`
			Build string          `json:"build"`
			Links map[string]link `json:"links"`
		}](request(ctx, http.MethodGet, "/v3/info", "", nil), http.StatusOK)
		Expect(info.Name).To(Equal("cf-hnc"))
		Expect(info.Build).To(Equal("3.160.0+cf-hnc"))
		Expect(info.Links).To(HaveKeyWithValue("self", link{Href: api + "/v3/info"}))
	})
})

type (
	stack struct {
		GUID             string `json:"guid"`
		Name             string `json:"name"`
		Description      string `json:"description"`
		BuildRootfsImage string `json:"build_rootfs_image"`
		RunRootfsImage   string `json:"run_rootfs_image"`
	}
	buildpack struct {
		Name      string  `json:"name"`
		Stack     *string `json:"stack"`
		Position  int     `json:"position"`
		State     string  `json:"state"`
		Enabled   bool    `json:"enabled"`
		Locked    bool    `json:"locked"`
		Filename  string  `json:"filename"`
		Lifecycle string  `json:"lifecycle"`
	}
)

var _ = Describe("cf stacks and cf buildpacks", Ordered, func() {
	const jammy, other = "io.buildpacks.stacks.jammy", "io.example.other"
	var (
		developer  user
		jammyStack *kpackv1alpha2.ClusterStack
		jammyName  string
		otherName  string
		pointer    = func(s string) *string { return &s }
	)

	// createCluster creates a cluster-scoped kpack object, with its status as kpack would write
	// it (no kpack controller runs in this suite), and deletes it after the specs.
	createCluster := func(ctx SpecContext, obj client.Object, status func()) {
		GinkgoHelper()
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, obj)).To(Succeed()) })
		status()
		Expect(k8s.Status().Update(ctx, obj)).To(Succeed())
	}

	BeforeAll(func(ctx SpecContext) {
		developer = newUser(ctx, "pusher")
		jammyName, otherName = unique("cflinuxfs4"), unique("other")
		jammyStack = &kpackv1alpha2.ClusterStack{
			ObjectMeta: metav1.ObjectMeta{Name: jammyName},
			Spec: kpackv1alpha2.ClusterStackSpec{Id: jammy,
				BuildImage: kpackv1alpha2.ClusterStackSpecImage{Image: "registry.example/build:jammy"},
				RunImage:   kpackv1alpha2.ClusterStackSpecImage{Image: "registry.example/run:jammy"}},
		}
		createCluster(ctx, jammyStack, func() {
			jammyStack.Status.ResolvedClusterStack = kpackv1alpha2.ResolvedClusterStack{Id: jammy,
				BuildImage: kpackv1alpha2.ClusterStackStatusImage{LatestImage: "registry.example/build@sha256:b"},
				RunImage:   kpackv1alpha2.ClusterStackStatusImage{LatestImage: "registry.example/run@sha256:r"}}
		})
		otherStack := &kpackv1alpha2.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: otherName}, Spec: kpackv1alpha2.ClusterStackSpec{Id: other}}
		createCluster(ctx, otherStack, func() {})

		store := &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: unique("store")}}
		createCluster(ctx, store, func() {
			bp := func(id, version string, stacks ...string) corev1alpha1.BuildpackStatus {
				s := corev1alpha1.BuildpackStatus{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: id, Version: version}}
				for _, stack := range stacks {
					s.Stacks = append(s.Stacks, corev1alpha1.BuildpackStack{ID: stack})
				}
				return s
			}
			store.Status.Buildpacks = []corev1alpha1.BuildpackStatus{
				bp("paketo-buildpacks/go", "4.0.0", jammy),
				bp("paketo-buildpacks/go", "3.9.0", jammy),
				bp("paketo-buildpacks/procfile", "5.0.0", "*"),
				bp("example/retired", "1.0.0", "io.example.gone"),
			}
		})
	})

	It("lists kpack's ClusterStacks by the names that cf push -s takes, read with the API's own rights", func(ctx SpecContext) {
		stacks := decode[struct {
			Resources []stack `json:"resources"`
		}](developer.get(ctx, "/v3/stacks?order_by=name"), http.StatusOK)
		Expect(stacks.Resources).To(ContainElements(
			stack{GUID: string(jammyStack.UID), Name: jammyName, Description: "Cloud Native Buildpacks stack " + jammy,
				BuildRootfsImage: "registry.example/build@sha256:b", RunRootfsImage: "registry.example/run@sha256:r"},
			HaveField("Description", "Cloud Native Buildpacks stack "+other),
		))
		Expect(cfErrorOf(request(ctx, http.MethodGet, "/v3/stacks", "", nil), http.StatusUnauthorized)).To(HaveField("Title", "CF-NotAuthenticated"))
	})

	It("lists the buildpacks of kpack's ClusterStores by the ids that cf push -b takes, one per stack each supports, by position", func(ctx SpecContext) {
		buildpacks := decode[struct {
			Resources []buildpack `json:"resources"`
		}](developer.get(ctx, "/v3/buildpacks"), http.StatusOK).Resources
		var ours []buildpack
		for i, bp := range buildpacks {
			Expect(bp.Position).To(Equal(i+1), "cf buildpacks lists them in the order of their positions")
			if bp.Stack == nil || *bp.Stack == jammyName || *bp.Stack == otherName {
				bp.Position = 0
				ours = append(ours, bp)
			}
		}
		ready := func(name string, stack *string, filename string) buildpack {
			return buildpack{Name: name, Stack: stack, State: "READY", Enabled: true, Filename: filename, Lifecycle: "buildpack"}
		}
		Expect(ours).To(Equal([]buildpack{
			ready("example/retired", nil, "example/retired@1.0.0"),
			ready("paketo-buildpacks/go", pointer(jammyName), "paketo-buildpacks/go@4.0.0"),
			ready("paketo-buildpacks/procfile", pointer(jammyName), "paketo-buildpacks/procfile@5.0.0"),
			ready("paketo-buildpacks/procfile", pointer(otherName), "paketo-buildpacks/procfile@5.0.0"),
		}))

		Expect(decode[struct {
			Resources []buildpack `json:"resources"`
		}](developer.get(ctx, "/v3/buildpacks?lifecycle=cnb"), http.StatusOK).Resources).To(BeEmpty())
		Expect(cfErrorOf(developer.get(ctx, "/v3/buildpacks?order_by=name"), http.StatusBadRequest)).To(HaveField("Title", "CF-BadQueryParameter"))
	})
})
