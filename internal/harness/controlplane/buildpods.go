package controlplane

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// kpackUser is the kpack controller's user on the local control plane.
const kpackUser = "kpack-controller"

//go:embed node/build-pod-network.yaml
var buildPodNetworkPolicy []byte

// applyBuildPodNetworkPolicy puts kpack's build pods on the host's network (the policy says
// why), for the kpack controller's user.
func (cp *ControlPlane) applyBuildPodNetworkPolicy(ctx context.Context) error {
	manifest := bytes.ReplaceAll(buildPodNetworkPolicy, []byte("{{KPACK_USER}}"), []byte(kpackUser))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("node/build-pod-network.yaml: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	if len(objs) != 2 {
		return fmt.Errorf("node/build-pod-network.yaml holds %d objects, not the policy and its binding", len(objs))
	}
	return install.Apply(ctx, cp.Client, objs)
}
