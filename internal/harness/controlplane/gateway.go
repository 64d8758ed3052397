package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The embedded default gateway (config/gateway): the Gateway API's CRDs (standard channel, from
// the sigs.k8s.io/gateway-api module that go.mod pins), Traefik as their implementation, built
// here from its module (hack/tools.sh traefik-image), and the Gateway cf-gateway/default, whose
// listener the control plane forwards to a loopback port (GatewayURL).

const (
	gatewayAPIModule = "sigs.k8s.io/gateway-api"
	// gatewayNamespace, gatewayService and gatewayName are config/gateway's.
	gatewayNamespace = "cf-gateway"
	gatewayService   = "cf-gateway"
	gatewayName      = "default"
	// gatewayImage is config/gateway's placeholder of Traefik's image.
	gatewayImage = "traefik"
	traefikTag   = "v3.7.13"
)

var gatewayDeployment = platformDeployment{"cf-gateway", gatewayNamespace, "cf-gateway"}

// startGateway installs the Gateway API's CRDs and the embedded default gateway, waits until
// its Gateway is programmed, and forwards Options.GatewayAddress to it.
func (cp *ControlPlane) startGateway(ctx context.Context) error {
	layout, err := cp.paths.binary("traefik-image")
	if err != nil {
		return err
	}
	image, err := cp.kpack.Registry.PublishLayoutImage(ctx, layout, "traefik", "gateway/traefik", traefikTag)
	if err != nil {
		return err
	}
	moduleDir, err := cp.paths.moduleDir(gatewayAPIModule)
	if err != nil {
		return err
	}
	crds, err := install.Build(filepath.Join(moduleDir, "config"), "crd", "")
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, cp.Client, crds); err != nil {
		return fmt.Errorf("installing the Gateway API: %w", err)
	}
	objs, err := install.BuildWithImages(cp.paths.config(), "gateway", map[string]string{gatewayImage: image.Pinned()})
	if err != nil {
		return err
	}
	if err := cp.applyPlatform(ctx, objs); err != nil {
		return fmt.Errorf("installing the gateway: %w", err)
	}
	if err := cp.waitRolledOut(ctx, gatewayDeployment); err != nil {
		return err
	}
	if err := cp.waitGatewayProgrammed(ctx); err != nil {
		return err
	}
	cp.gatewayForward, err = cp.forwardService(ctx, gatewayNamespace, gatewayService, "http", cp.opts.GatewayAddress)
	return err
}

// waitGatewayProgrammed waits until Traefik reports the Gateway Programmed.
func (cp *ControlPlane) waitGatewayProgrammed(ctx context.Context) error {
	gateway := &gatewayv1.Gateway{}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: gatewayNamespace, Name: gatewayName}, gateway); err != nil {
			last = err.Error()
			return false, nil
		}
		programmed := meta.FindStatusCondition(gateway.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		if programmed == nil {
			last = "no Programmed condition yet"
			return false, nil
		}
		last = fmt.Sprintf("Programmed %s: %s", programmed.Status, programmed.Message)
		return programmed.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		return fmt.Errorf("the Gateway %s/%s is not programmed: %s%s", gatewayNamespace, gatewayName, last, cp.describePods(ctx, gatewayDeployment))
	}
	return nil
}

// GatewayURL is the address of the embedded default gateway's HTTP listener, forwarded to
// loopback (a request names the route's host in its Host header); empty when it does not run.
func (cp *ControlPlane) GatewayURL() string {
	if cp.gatewayForward == nil {
		return ""
	}
	return "http://" + cp.gatewayForward.address()
}
