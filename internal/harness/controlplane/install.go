package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// cf-hnc runs here as it runs in a cluster: its image is built from the project's working tree
// (bin/cf-hnc-image, ko), published to the local registry, and config/default is built with it
// and server-side applied whole, as `make deploy` applies it (CRDs, namespace, ServiceAccounts,
// RBAC, the manager's and the CF API's Deployments and Services, webhook configuration,
// certificate Secret, policies, HNC's configuration, the root namespace). The node pulls the
// image and runs two manager pods, which elect a leader, rotate the webhook certificate through
// the Service's DNS name and serve the webhooks the apiserver calls at their pod addresses, and
// two CF API pods. Nothing of it differs from a cluster's; ADR 4 lists what the local node
// itself does differently.

// imageBuild is a build of cf-hnc's image into an OCI image layout.
type imageBuild struct {
	layout string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// buildCFHNCImage starts building cf-hnc's image (the manager and the CF API) from the working
// tree into dir, stamped with the creation time epoch (seconds since 1970): another epoch makes
// another image of the same tree, as a newer release would be.
func (cp *ControlPlane) buildCFHNCImage(ctx context.Context, dir string, epoch int64) *imageBuild {
	ctx, cancel := context.WithCancel(ctx)
	b := &imageBuild{layout: dir, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		tool, err := cp.paths.binary("cf-hnc-image")
		if err != nil {
			b.err = err
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			b.err = err
			return
		}
		log := filepath.Join(cp.paths.logDir(), "cf-hnc-image.log")
		out, err := os.Create(log)
		if err != nil {
			b.err = err
			return
		}
		defer out.Close()
		cmd := exec.CommandContext(ctx, tool, "--project", cp.paths.projectDir, "--oci-layout", dir,
			"--source-date-epoch", strconv.FormatInt(epoch, 10))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			b.err = fmt.Errorf("building cf-hnc's image: %w; see %s", err, log)
		}
	}()
	return b
}

// publish waits for the build and publishes the image to the registry as cnb/cf-hnc/manager:tag,
// returning its reference by digest.
func (b *imageBuild) publish(ctx context.Context, cp *ControlPlane, tag string) (string, error) {
	select {
	case <-b.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if b.err != nil {
		return "", b.err
	}
	ref, err := cp.kpack.Registry.PublishLayoutImage(ctx, b.layout, "", "cf-hnc/manager", tag)
	if err != nil {
		return "", err
	}
	return ref.Pinned(), nil
}

// Deploy installs cf-hnc from the image of the working tree that Start began building, and waits
// until every manager and CF API pod runs it (DeployImage). Start does it for Options.CFHNC.
func (cp *ControlPlane) Deploy(ctx context.Context) error {
	image, err := cp.cfhncImage.publish(ctx, cp, "local")
	if err != nil {
		return err
	}
	return cp.DeployImage(ctx, image)
}

// BuildCFHNCImage builds cf-hnc's image from the working tree with another creation time than
// the one Start built, as a newer release of the same code, and publishes it; it returns its
// reference by digest, for DeployImage.
func (cp *ControlPlane) BuildCFHNCImage(ctx context.Context, epoch int64) (string, error) {
	tag := "epoch-" + strconv.FormatInt(epoch, 10)
	build := cp.buildCFHNCImage(ctx, filepath.Join(cp.paths.workDir, "images", "cf-hnc-"+tag), epoch)
	defer build.cancel()
	return build.publish(ctx, cp, tag)
}

// DeployImage applies config/default with cf-hnc's image set to image (ApplyCFHNC), then waits
// until the manager's and the CF API's Deployments are rolled out. Over a running installation
// it is an upgrade: the Deployments replace their pods one at a time.
func (cp *ControlPlane) DeployImage(ctx context.Context, image string) error {
	if err := cp.ApplyCFHNC(ctx, image); err != nil {
		return err
	}
	for _, d := range []platformDeployment{managerDeployment, apiDeployment} {
		if err := cp.waitRolledOut(ctx, d); err != nil {
			return err
		}
	}
	cp.deployedImage = image
	return nil
}

// ApplyCFHNC applies config/default with cf-hnc's image set to image, as `make deploy
// IMG=image` does, with the CF API's certificate Secret, which an operator makes; it does not
// wait for the rollout.
func (cp *ControlPlane) ApplyCFHNC(ctx context.Context, image string) error {
	objs, err := install.Build(cp.paths.config(), install.Default, image)
	if err != nil {
		return err
	}
	// The URL the CF API is forwarded at (exposeCFAPI), as an operator gives the one its load
	// balancer or ingress answers at.
	if err := install.SetAPIURL(objs, cp.CFAPIURL()); err != nil {
		return err
	}
	if err := cp.applyPlatform(ctx, objs); err != nil {
		return fmt.Errorf("applying config/default: %w", err)
	}
	return cp.ensureAPICertificate(ctx)
}

// DeployedImage is the image of the last DeployImage.
func (cp *ControlPlane) DeployedImage() string { return cp.deployedImage }

// ensureAPICertificate makes the Secret of the CF API's serving certificate, which an operator
// gets for the host name the cf CLI uses (docs/install.md): here for localhost and 127.0.0.1,
// where the control plane forwards the API (CFAPIURL), and the Service's DNS name, signed by a CA
// of this run (CFAPICA). The certificate is made once a run: a reinstall gets the same one, which
// clients already trust. An existing Secret is kept.
func (cp *ControlPlane) ensureAPICertificate(ctx context.Context) error {
	if cp.cfAPICert == (keyPair{}) {
		ca, err := newLocalCA(filepath.Join(cp.paths.workDir, "cf-api-tls"), "cf-hnc local CF API CA")
		if err != nil {
			return err
		}
		if cp.cfAPICert, err = ca.issue("tls", "cf-hnc-api", "localhost", "127.0.0.1",
			install.APIDeployment+"."+install.Namespace+".svc"); err != nil {
			return err
		}
		cp.cfAPICA = ca.caFile
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: install.APISecret}}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	secret.Type = corev1.SecretTypeTLS
	secret.Data = map[string][]byte{}
	for key, file := range map[string]string{corev1.TLSCertKey: cp.cfAPICert.certFile, corev1.TLSPrivateKeyKey: cp.cfAPICert.keyFile} {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		secret.Data[key] = data
	}
	return cp.Client.Create(ctx, secret)
}

// applyKustomization builds config/<name> and applies it.
func (cp *ControlPlane) applyKustomization(ctx context.Context, name string) error {
	objs, err := install.Build(cp.paths.config(), name, "")
	if err != nil {
		return err
	}
	return install.Apply(ctx, cp.Client, objs)
}

// requireForCFHNC says what Options.CFHNC needs besides.
func requireForCFHNC(opts Options) error {
	if opts.CFHNC && !(opts.Node && opts.HNC && opts.Kpack) {
		return errors.New("cf-hnc runs as pods of the node, with HNC and kpack: Options.CFHNC needs Node, HNC and Kpack")
	}
	if opts.Gateway && !opts.Node {
		return errors.New("the gateway runs as pods of the node: Options.Gateway needs Node")
	}
	if (opts.Kpack || opts.Node) && !(opts.Node && opts.ControllerManager) {
		return errors.New("kpack runs as pods of the node, whose Deployments and ServiceAccounts kube-controller-manager makes: Options.Kpack needs Node, and Node needs ControllerManager")
	}
	return nil
}
