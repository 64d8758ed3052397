package install

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OverrideArgs returns the Deployment's args with the flags in set given their values: a flag
// the Deployment passes keeps its place, one it does not pass is appended (in the order of
// allowed). Only flags in allowed may be set, and every arg must be --name=value, so that
// nothing else can differ from the Deployment unnoticed.
func OverrideArgs(deployed []string, set map[string]string, allowed []string) ([]string, error) {
	for name := range set {
		if !slices.Contains(allowed, name) {
			return nil, fmt.Errorf("flag --%s is not one that may differ from the Deployment's", name)
		}
	}
	args := make([]string, 0, len(deployed)+len(set))
	seen := map[string]bool{}
	for _, arg := range deployed {
		name, _, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !ok || !strings.HasPrefix(arg, "--") {
			return nil, fmt.Errorf("the Deployment's arg %q is not --name=value", arg)
		}
		if seen[name] {
			return nil, fmt.Errorf("the Deployment passes --%s twice", name)
		}
		seen[name] = true
		if value, ok := set[name]; ok {
			arg = "--" + name + "=" + value
		}
		args = append(args, arg)
	}
	for _, name := range allowed {
		if value, ok := set[name]; ok && !seen[name] {
			args = append(args, "--"+name+"="+value)
		}
	}
	return args, nil
}

// InClusterOnly says whether obj serves only a manager that runs in the cluster: its
// Deployment and disruption budget, its Services, its webhook configurations and certificate.
// A manager run from a developer's machine against a cluster (make run with KUBECONFIG) needs
// everything else, and must not register webhooks that the cluster cannot call.
func InClusterOnly(obj *unstructured.Unstructured) bool {
	switch obj.GetKind() {
	case "Deployment", "PodDisruptionBudget", "Service", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return true
	case "Secret":
		return obj.GetNamespace() == Namespace && obj.GetName() == WebhookSecret
	}
	return false
}
