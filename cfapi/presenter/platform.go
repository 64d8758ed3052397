package presenter

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

// Info is GET /v3/info: what the platform is.
type Info struct {
	Name          string            `json:"name"`
	Build         string            `json:"build"`
	Version       int               `json:"version"`
	Description   string            `json:"description"`
	OSBAPIVersion string            `json:"osbapi_version"`
	CLIVersion    CLIVersion        `json:"cli_version"`
	Custom        map[string]string `json:"custom"`
	Links         map[string]Link   `json:"links"`
}

// CLIVersion is the cf CLI versions the platform asks for; cf-hnc asks for none.
type CLIVersion struct {
	Minimum     string `json:"minimum"`
	Recommended string `json:"recommended"`
}

// ForInfo presents GET /v3/info. cf-hnc offers no service brokers: no OSBAPI version.
func ForInfo(base *url.URL) Info {
	return Info{
		Name:        "cf-hnc",
		Build:       Version,
		Description: "Cloud Foundry's orgs, spaces and apps on Kubernetes namespaces (HNC) and kpack builds",
		Custom:      map[string]string{},
		Links:       map[string]Link{"self": {Href: href(base, "v3", "info")}},
	}
}

// Stack is a CF stack.
type Stack struct {
	Resource
	Description      string          `json:"description"`
	BuildRootfsImage string          `json:"build_rootfs_image"`
	RunRootfsImage   string          `json:"run_rootfs_image"`
	Links            map[string]Link `json:"links"`
}

// ForStack presents a kpack ClusterStack: its name is what an app's lifecycle names (cf push
// -s), its description the stack id of the images, as kpack resolved them.
func ForStack(stack *kpackv1alpha2.ClusterStack, base *url.URL) Stack {
	r := resource(stack, stack.Name, nil)
	r.GUID = string(stack.UID)
	return Stack{
		Resource:         r,
		Description:      "Cloud Native Buildpacks stack " + cf.StackID(stack),
		BuildRootfsImage: cmp.Or(stack.Status.BuildImage.LatestImage, stack.Spec.BuildImage.Image),
		RunRootfsImage:   cmp.Or(stack.Status.RunImage.LatestImage, stack.Spec.RunImage.Image),
		Links:            map[string]Link{"self": {Href: href(base, "v3", "stacks", string(stack.UID))}},
	}
}

// Buildpack is a CF buildpack.
type Buildpack struct {
	GUID      string          `json:"guid"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Name      string          `json:"name"`
	Stack     *string         `json:"stack"`
	State     string          `json:"state"`
	Filename  string          `json:"filename"`
	Position  int             `json:"position"`
	Enabled   bool            `json:"enabled"`
	Locked    bool            `json:"locked"`
	Lifecycle string          `json:"lifecycle"`
	Metadata  Metadata        `json:"metadata"`
	Links     map[string]Link `json:"links"`
}

// ListFields are the fields a list filters and orders by.
func (b Buildpack) ListFields() listing.Fields {
	return listing.Fields{GUID: b.GUID, Name: b.Name, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, Position: b.Position}
}

// ForBuildpack presents a buildpack of kpack's ClusterStores (cf.Buildpacks), which an app's
// lifecycle names by id (cf push -b). Every one is READY and enabled: kpack lists a buildpack
// once it has read it.
func ForBuildpack(bp cf.Buildpack, base *url.URL) Buildpack {
	created := bp.Store.CreationTimestamp.UTC()
	b := Buildpack{
		GUID: guidOf(bp.Id, bp.Stack), CreatedAt: created, UpdatedAt: created,
		Name: bp.Id, State: "READY", Filename: bp.String(), Enabled: true, Position: bp.Position,
		Lifecycle: string(cfv1alpha1.BuildpackLifecycle),
		Metadata:  Metadata{Labels: map[string]string{}, Annotations: map[string]string{}},
	}
	if bp.Stack != "" {
		b.Stack = &bp.Stack
	}
	b.Links = map[string]Link{"self": {Href: href(base, "v3", "buildpacks", b.GUID)}}
	return b
}

// guidOf is a GUID that stays the same for the same parts: a buildpack is no object of its own.
func guidOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := hex.EncodeToString(h.Sum(nil))
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}
