// Package install builds cf-hnc's kustomizations (config/default, config/samples) with
// kustomize's library and server-side applies the result, and removes it again. It is the one
// implementation behind `make deploy` and `make undeploy`, `make run` against a cluster, and
// the local control plane of `make run`, the e2e suite and the benchmarks.
package install

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	// Default is the kustomization that installs cf-hnc.
	Default = "default"
	// Samples is the kustomization of the sample org, space, credentials and Builder.
	Samples = "samples"

	// ManagerImage is the placeholder image of the manager in config/manager.
	ManagerImage = "cf-hnc-manager"
	// Namespace is the manager's namespace.
	Namespace = "cf-hnc-system"
	// ManagerDeployment is the manager's Deployment, in Namespace.
	ManagerDeployment = "cf-hnc-manager"
	// ManagerContainer is the manager's container in ManagerDeployment.
	ManagerContainer = "manager"
	// ServiceAccount is the manager's ServiceAccount, in Namespace.
	ServiceAccount = "cf-hnc-manager"
	// ValidatingWebhookConfiguration is the name of cf-hnc's ValidatingWebhookConfiguration.
	ValidatingWebhookConfiguration = "cf-hnc-validating-webhook-configuration"
	// MutatingWebhookConfiguration is the name of cf-hnc's MutatingWebhookConfiguration (it
	// paces rebuild pods).
	MutatingWebhookConfiguration = "cf-hnc-mutating-webhook-configuration"
	// WebhookSecret holds the webhook serving certificate that the manager rotates.
	WebhookSecret = "cf-hnc-webhook-server-cert"

	// APIDeployment is the CF API's Deployment (config/cf-api), in Namespace.
	APIDeployment = "cf-hnc-api"
	// APIContainer is the CF API's container in APIDeployment.
	APIContainer = "api"
	// APIServiceAccount is the CF API's ServiceAccount, in Namespace.
	APIServiceAccount = "cf-hnc-api"
	// APISecret is the Secret of the CF API's serving certificate, which the operator creates.
	APISecret = "cf-hnc-api-tls"
)

// Build renders the kustomization config/<kustomization> of configDir, with the manager's
// image set to image unless it is empty (BuildWithImages).
func Build(configDir, kustomization, image string) ([]*unstructured.Unstructured, error) {
	images := map[string]string{}
	if image != "" {
		images[ManagerImage] = image
	}
	return BuildWithImages(configDir, kustomization, images)
}

// BuildWithImages renders the kustomization config/<kustomization> of configDir, with each
// image named by a key of images replaced by its value (a reference by tag or digest).
// Kustomize runs on an in-memory copy of configDir, so that the images are set by an overlay and
// no file of the checkout changes (as `kustomize edit set image` would change it).
func BuildWithImages(configDir, kustomization string, images map[string]string) ([]*unstructured.Unstructured, error) {
	fsys := filesys.MakeFsInMemory()
	if err := copyTree(configDir, "/config", fsys); err != nil {
		return nil, err
	}
	target := "/config/" + kustomization
	if len(images) > 0 {
		overlay, err := imageOverlay("../config/"+kustomization, images)
		if err != nil {
			return nil, err
		}
		if err := fsys.WriteFile("/overlay/kustomization.yaml", overlay); err != nil {
			return nil, err
		}
		target = "/overlay"
	}
	objs, err := kustomize(fsys, target)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", filepath.Join(configDir, kustomization), err)
	}
	return objs, nil
}

// HNCObjectsWebhookPatch is config/hnc's patch of HNC's ValidatingWebhookConfiguration: the
// object webhook called only for the kinds HNC propagates.
const HNCObjectsWebhookPatch = "objects-webhook.yaml"

// BuildHNC renders HNC's release manifest (default.yaml, the kustomization
// config/variants/default-cc of hncConfigDir, the config directory of HNC's module) with
// cf-hnc's changes of config/hnc in configDir: the manager's flags (manager-args.yaml), the
// object webhook narrowed to the kinds HNC propagates, and HNC's configuration for cf-hnc. The
// manager's image is image, unless it is empty.
func BuildHNC(hncConfigDir, configDir, image string) ([]*unstructured.Unstructured, error) {
	fsys := filesys.MakeFsInMemory()
	if err := copyTree(hncConfigDir, "/hnc", fsys); err != nil {
		return nil, err
	}
	if err := copyTree(filepath.Join(configDir, "hnc"), "/cf-hnc", fsys); err != nil {
		return nil, err
	}
	k := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{"hnc/variants/default-cc", "cf-hnc"},
		Patches:   []kustypes.Patch{{Path: "cf-hnc/manager-args.yaml"}, {Path: "cf-hnc/" + HNCObjectsWebhookPatch}},
	}
	if image != "" {
		// HNC's manifest names its image "controller", which its release process replaces.
		k.Images = []kustypes.Image{imageNamed("controller", image)}
	}
	overlay, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fsys.WriteFile("/kustomization.yaml", overlay); err != nil {
		return nil, err
	}
	objs, err := kustomize(fsys, "/")
	if err != nil {
		return nil, fmt.Errorf("building HNC's release with %s: %w", filepath.Join(configDir, "hnc"), err)
	}
	return objs, nil
}

// kustomize runs the kustomization at target of fsys.
func kustomize(fsys filesys.FileSystem, target string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, target)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		// Through JSON, so that numbers are int64 and float64 as client-go expects.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// copyTree copies the regular files below dir into fsys at root.
func copyTree(dir, root string, fsys filesys.FileSystem) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dest := path.Join(root, filepath.ToSlash(rel))
		if err := fsys.MkdirAll(path.Dir(dest)); err != nil {
			return err
		}
		return fsys.WriteFile(dest, data)
	})
}

// imageOverlay is a kustomization of base that replaces the images named by the keys of images.
func imageOverlay(base string, images map[string]string) ([]byte, error) {
	k := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{base},
	}
	for _, name := range slices.Sorted(maps.Keys(images)) {
		k.Images = append(k.Images, imageNamed(name, images[name]))
	}
	return yaml.Marshal(k)
}

// imageNamed replaces the image called name with image, a reference by tag or digest.
func imageNamed(name, image string) kustypes.Image {
	img := kustypes.Image{Name: name}
	switch repo, digest, ok := strings.Cut(image, "@"); {
	case ok:
		img.NewName, img.Digest = repo, digest
	default:
		// A colon after the last slash separates the tag (a registry's port comes before it).
		if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
			img.NewName, img.NewTag = image[:i], image[i+1:]
		} else {
			img.NewName = image
		}
	}
	return img
}

// SetAPIURL sets the CF API's --external-url, the API's URL as the cf CLI reaches it, in the
// CF API's Deployment among built objects.
func SetAPIURL(objs []*unstructured.Unstructured, url string) error {
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" || obj.GetNamespace() != Namespace || obj.GetName() != APIDeployment {
			continue
		}
		containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return err
		}
		for i, c := range containers {
			container, ok := c.(map[string]any)
			if !ok || container["name"] != APIContainer {
				continue
			}
			deployed, _, err := unstructured.NestedStringSlice(container, "args")
			if err != nil {
				return err
			}
			args, err := OverrideArgs(deployed, map[string]string{"external-url": url}, []string{"external-url"})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedStringSlice(container, args, "args"); err != nil {
				return err
			}
			containers[i] = container
			return unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
		}
	}
	return fmt.Errorf("no container %s in Deployment %s/%s among the built objects", APIContainer, Namespace, APIDeployment)
}

// ManagerDeploymentOf returns the manager's Deployment among built objects.
func ManagerDeploymentOf(objs []*unstructured.Unstructured) (*appsv1.Deployment, error) {
	return deploymentOf(objs, ManagerDeployment)
}

// ManagerContainerOf returns the manager's container of its Deployment.
func ManagerContainerOf(objs []*unstructured.Unstructured) (*corev1.Container, error) {
	return containerOf(objs, ManagerDeployment, ManagerContainer)
}

// APIContainerOf returns the CF API's container of its Deployment.
func APIContainerOf(objs []*unstructured.Unstructured) (*corev1.Container, error) {
	return containerOf(objs, APIDeployment, APIContainer)
}

func deploymentOf(objs []*unstructured.Unstructured, name string) (*appsv1.Deployment, error) {
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GetNamespace() == Namespace && obj.GetName() == name {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("no Deployment %s/%s in the built objects", Namespace, name)
}

func containerOf(objs []*unstructured.Unstructured, deployment, container string) (*corev1.Container, error) {
	d, err := deploymentOf(objs, deployment)
	if err != nil {
		return nil, err
	}
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == container {
			return c, nil
		}
	}
	return nil, fmt.Errorf("Deployment %s/%s has no container %q", Namespace, deployment, container)
}
