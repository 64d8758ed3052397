package standinkubelet

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// registrySourcePullSecretsVolume is the volume through which kpack hands a registry source's
// imagePullSecrets to build-init; build_pod.go keeps the name unexported.
const registrySourcePullSecretsVolume = "registry-source-pull-secrets-dir"

// podKind tells the two pod layouts kpack creates for a Build apart.
type podKind int

const (
	buildPod podKind = iota
	rebasePod
)

// plan is what the stand-in reads from a kpack build pod: everything a kubelet and the
// binaries in the pod's containers would learn from its spec.
type plan struct {
	kind podKind
	// namespace and labels are the pod's, which FailBuilds matches.
	namespace string
	labels    labels.Set
	// tags are the app image tags, the first being the one kpack reports.
	tags []string
	// runImage is the run image to build on or rebase onto.
	runImage string
	// cacheTag is the completion container's CACHE_TAG: the registry cache, if any.
	cacheTag string
	secrets  secretRefs

	// For a build pod only.
	source         string // REGISTRY_IMAGE; empty for git and blob sources
	sourceSubPath  string
	builderImage   string
	cacheImage     string // the exporter's -cache-image
	defaultProcess string // the exporter's -process-type
	platformAPI    string

	// For a rebase pod only.
	lastBuiltImage string
}

// secretRefs names the Secrets a pod's containers read credentials from.
type secretRefs struct {
	// basicAuth maps Secrets of type basic-auth to the registry they are for (-basic-docker).
	basicAuth []basicAuthRef
	// dockerConfigs are dockercfg and dockerconfigjson Secrets (-dockercfg, -dockerconfig).
	dockerConfigs []string
	// imagePull are the builder's pull Secrets that kpack passes as -imagepull.
	imagePull []string
	// sourcePull is the registry source's pull Secret, mounted for build-init.
	sourcePull string
	// podPull are the pod's imagePullSecrets, with which a kubelet pulls the builder image.
	podPull []string
	// serviceAccount is the pod's ServiceAccount. On a real cluster the ServiceAccount
	// admission plugin copies its imagePullSecrets into a pod that has none; envtest disables
	// that plugin, so the stand-in reads them itself.
	serviceAccount string
}

type basicAuthRef struct {
	secret   string
	registry string
}

var buildGroupKind = schema.GroupKind{Group: "kpack.io", Kind: "Build"}

// isBuildPod reports whether a pod is one that kpack created for a Build.
func isBuildPod(pod *corev1.Pod) bool {
	if _, ok := pod.Labels[kpackv1alpha2.BuildLabel]; !ok {
		return false
	}
	for _, owner := range pod.OwnerReferences {
		gv, err := schema.ParseGroupVersion(owner.APIVersion)
		if err == nil && owner.Controller != nil && *owner.Controller &&
			gv.WithKind(owner.Kind).GroupKind() == buildGroupKind {
			return true
		}
	}
	return false
}

// isDone reports whether a pod needs nothing more from a kubelet.
func isDone(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// isScheduled reports whether a pod may be scheduled, and so reach a kubelet: a pod with
// scheduling gates waits for whoever gated it, and no kubelet sees it meanwhile.
func isScheduled(pod *corev1.Pod) bool {
	return len(pod.Spec.SchedulingGates) == 0
}

// planFor reads a kpack build pod. It fails for layouts the stand-in does not simulate, such
// as kpack's injected-sidecar layout.
func planFor(pod *corev1.Pod) (plan, error) {
	completion, ok := container(pod.Spec.Containers, kpackv1alpha2.CompletionContainerName)
	if !ok || len(pod.Spec.Containers) != 1 {
		return plan{}, errors.New("expected exactly one container, completion, as kpack creates without injected sidecar support")
	}
	p := plan{
		namespace: pod.Namespace,
		labels:    labels.Set(pod.Labels),
		cacheTag:  env(completion, kpackv1alpha2.CacheTagEnvVar),
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		p.secrets.podPull = append(p.secrets.podPull, s.Name)
	}
	p.secrets.serviceAccount = pod.Spec.ServiceAccountName

	names := make([]string, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	switch {
	case slices.Equal(names, []string{kpackv1alpha2.RebaseContainerName}):
		return planRebase(p, pod.Spec.InitContainers[0])
	case slices.Equal(names, buildSteps):
		return planBuild(p, pod)
	default:
		return plan{}, fmt.Errorf("unexpected init containers %v", names)
	}
}

// buildSteps are the init containers of a build pod, in the order they run.
var buildSteps = []string{
	kpackv1alpha2.PrepareContainerName,
	kpackv1alpha2.AnalyzeContainerName,
	kpackv1alpha2.DetectContainerName,
	kpackv1alpha2.RestoreContainerName,
	kpackv1alpha2.BuildContainerName,
	kpackv1alpha2.ExportContainerName,
}

func planBuild(p plan, pod *corev1.Pod) (plan, error) {
	prepare, _ := container(pod.Spec.InitContainers, kpackv1alpha2.PrepareContainerName)
	detect, _ := container(pod.Spec.InitContainers, kpackv1alpha2.DetectContainerName)
	export, _ := container(pod.Spec.InitContainers, kpackv1alpha2.ExportContainerName)

	flags, tags := parseArgs(export.Args)
	if len(tags) == 0 {
		return plan{}, errors.New("the export container names no image tags")
	}
	p.kind = buildPod
	p.tags = tags
	p.runImage = env(export, "CNB_RUN_IMAGE")
	p.cacheImage = last(flags["cache-image"])
	p.defaultProcess = last(flags["process-type"])
	p.platformAPI = env(export, "CNB_PLATFORM_API")
	p.builderImage = detect.Image
	p.source = env(prepare, "REGISTRY_IMAGE")
	p.sourceSubPath = env(prepare, "SOURCE_SUB_PATH")
	p.secrets = secretsFrom(prepare.Args, p.secrets)
	for _, v := range pod.Spec.Volumes {
		if v.Name == registrySourcePullSecretsVolume && v.Secret != nil {
			p.secrets.sourcePull = v.Secret.SecretName
		}
	}
	return p, nil
}

func planRebase(p plan, rebase corev1.Container) (plan, error) {
	flags, tags := parseArgs(rebase.Args)
	if len(tags) == 0 {
		return plan{}, errors.New("the rebase container names no image tags")
	}
	p.kind = rebasePod
	p.tags = tags
	p.runImage = last(flags["run-image"])
	p.lastBuiltImage = last(flags["last-built-image"])
	p.secrets = secretsFrom(rebase.Args, p.secrets)
	return p, nil
}

// secretsFrom adds the credential arguments that kpack passes to build-init and rebase.
func secretsFrom(args []string, refs secretRefs) secretRefs {
	flags, _ := parseArgs(args)
	for _, arg := range flags["basic-docker"] {
		secret, registry, _ := strings.Cut(arg, "=")
		refs.basicAuth = append(refs.basicAuth, basicAuthRef{secret: secret, registry: registry})
	}
	refs.dockerConfigs = append(refs.dockerConfigs, flags["dockercfg"]...)
	refs.dockerConfigs = append(refs.dockerConfigs, flags["dockerconfig"]...)
	refs.imagePull = append(refs.imagePull, flags["imagepull"]...)
	return refs
}

// parseArgs splits a command line the way Go's flag package does for kpack's binaries and the
// lifecycle, whose flags all take a value: "-name=value" or "-name value" (one or two dashes),
// up to the first argument that is not a flag; the rest are positional.
func parseArgs(args []string) (flags map[string][]string, positional []string) {
	flags = map[string][]string{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return flags, args[i+1:]
		}
		if len(arg) < 2 || arg[0] != '-' {
			return flags, args[i:]
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		flags[name] = append(flags[name], value)
	}
	return flags, nil
}

func container(containers []corev1.Container, name string) (corev1.Container, bool) {
	for _, c := range containers {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func last(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}
