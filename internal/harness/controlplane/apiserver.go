package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

const (
	hncModule   = "sigs.k8s.io/hierarchical-namespaces"
	kpackModule = "github.com/pivotal/kpack"
)

// kpackCRDs are the CRD files of kpack's config directory (the rest are deployment manifests).
var kpackCRDs = []string{
	"build.yaml", "builder.yaml", "buildpack.yaml", "clusterbuilder.yaml", "clusterbuildpack.yaml",
	"clusterlifecycle.yaml", "clusterstack.yaml", "clusterstore.yaml", "image.yaml", "sourceresolver.yaml",
}

func (cp *ControlPlane) startAPIServer(context.Context) error {
	for _, tool := range []string{"etcd", "kube-apiserver"} {
		if _, err := cp.paths.binary(tool); err != nil {
			return err
		}
	}
	crds, err := cp.crds()
	if err != nil {
		return err
	}
	etcdLog, err := os.Create(filepath.Join(cp.paths.logDir(), "etcd.log"))
	if err != nil {
		return err
	}
	apiserverLog, err := os.Create(filepath.Join(cp.paths.logDir(), "kube-apiserver.log"))
	if err != nil {
		return err
	}
	cp.env = &envtest.Environment{
		BinaryAssetsDirectory:    cp.paths.binDir(),
		CRDs:                     crds,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  20 * time.Second,
		Scheme:                   cfscheme.New(),
	}
	// Certificates in a directory of this run, not a random one that envtest replaces on a
	// restart: clients keep trusting the apiserver across RestartAPIServer.
	certDir := filepath.Join(cp.paths.workDir, "apiserver")
	if err := emptyDir(certDir); err != nil {
		return err
	}
	cp.env.ControlPlane.APIServer = &envtest.APIServer{Out: apiserverLog, Err: apiserverLog, CertDir: certDir}
	if cp.env.ControlPlane.Etcd, err = cp.etcdWithClientCertificates(filepath.Join(certDir, "etcd"), etcdLog); err != nil {
		return err
	}
	if cp.opts.Node {
		if err := cp.configureForNode(certDir); err != nil {
			return err
		}
	}
	cfg, err := cp.env.Start()
	for _, tool := range []string{"etcd", "kube-apiserver"} {
		for _, pid := range childrenRunning(filepath.Join(cp.paths.binDir(), tool)) {
			cp.paths.recordPID(tool, pid)
		}
	}
	if err != nil {
		return fmt.Errorf("etcd or kube-apiserver failed to start: %w; see %s and %s",
			err, etcdLog.Name(), apiserverLog.Name())
	}
	cp.Config = cfg
	if cp.Client, err = client.New(cfg, client.Options{Scheme: cp.env.Scheme}); err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(cp.paths.workDir, "kubeconfig")
	return os.WriteFile(cp.Kubeconfig, cp.env.KubeConfig, 0o600)
}

// crds returns cf-hnc's CRDs and, without a node, those of HNC and kpack, which run as host
// processes then (kpack's without their conversion webhook: no kpack webhook runs, and every
// client uses the storage version). With a node, HNC's and kpack's releases install their own.
func (cp *ControlPlane) crds() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(cp.paths.config("crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s: run `make manifests`", cp.paths.config("crd", "bases"))
	}
	if !cp.opts.Node {
		upstream, err := cp.paths.upstreamCRDs()
		if err != nil {
			return nil, err
		}
		files = append(files, upstream...)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		crd, err := readCRD(file)
		if err != nil {
			return nil, err
		}
		crd.Spec.Conversion = nil
		crds = append(crds, crd)
	}
	return crds, nil
}

// upstreamCRDs are the CRD files of HNC's and kpack's modules.
func (p paths) upstreamCRDs() ([]string, error) {
	hncDir, err := p.moduleDir(hncModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(hncDir, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	kpackDir, err := p.moduleDir(kpackModule)
	if err != nil {
		return nil, err
	}
	for _, name := range kpackCRDs {
		files = append(files, filepath.Join(kpackDir, "config", name))
	}
	return files, nil
}

func readCRD(file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := readYAMLDocuments(file)
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err == nil && crd.Kind == "CustomResourceDefinition" {
			return crd, nil
		}
	}
	return nil, fmt.Errorf("%s holds no CustomResourceDefinition", file)
}

// readYAMLDocuments splits a multi-document YAML file.
func readYAMLDocuments(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// configureForNode gives the apiserver what a cluster with a node has: the Node authorizer and
// NodeRestriction for the kubelet's own user; the ServiceAccount admission plugin, which
// envtest turns off and without which a pod never gets its ServiceAccount's token or image pull
// secrets (cf-hnc puts the registry credentials there); a client certificate for the kubelet's
// API, which it reaches at the node's name (its address, 127.0.0.1); and what pods need to reach
// it and be reached by it (podnetwork.go): the `kubernetes` Service in serviceSubnet with the
// host's bridge address as its endpoint, a serving certificate for those addresses, and webhook
// Services called at their endpoints' pod addresses (--enable-aggregator-routing: the apiserver
// resolves a webhook's Service through its EndpointSlices, as it does for aggregated APIs,
// and verifies the certificate for the Service's DNS name), since no kube-proxy runs here.
func (cp *ControlPlane) configureForNode(certDir string) error {
	kubelet, err := newKubeletClient(filepath.Join(certDir, "kubelet-client"))
	if err != nil {
		return err
	}
	cp.kubeletClient = kubelet
	if err := cp.servingCertificate(certDir); err != nil {
		return err
	}
	cp.env.ControlPlane.APIServer.Configure().
		Disable("disable-admission-plugins").
		Set("enable-admission-plugins", "NodeRestriction").
		Set("authorization-mode", "Node,RBAC").
		Set("kubelet-client-certificate", kubelet.certFile).
		Set("kubelet-client-key", kubelet.keyFile).
		Set("kubelet-preferred-address-types", "Hostname").
		Set("advertise-address", cp.network.host.String()).
		Set("service-cluster-ip-range", serviceSubnet.String()).
		Set("enable-aggregator-routing", "true")
	return nil
}

// servingCertificate gives the apiserver a serving certificate for the names and addresses pods
// dial (the `kubernetes` Service's cluster IP and DNS names, the host's bridge address) besides
// localhost and 127.0.0.1, which envtest's names alone. envtest writes its own certificate, and
// the ServiceAccount token signing key beside it, only when apiserver.crt is missing from the
// certificate directory, and gives clients the CA of SecureServing: this writes all three.
func (cp *ControlPlane) servingCertificate(certDir string) error {
	ca, err := newLocalCA(filepath.Join(certDir, "serving-ca"), "cf-hnc local apiserver CA")
	if err != nil {
		return err
	}
	serving, err := ca.issue("serving", "kube-apiserver", "localhost", "127.0.0.1", kubernetesServiceIP.String(),
		cp.network.host.String(), "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return err
	}
	signer, err := ca.issue("service-account-signer", "service-account-signer")
	if err != nil {
		return err
	}
	for from, to := range map[string]string{
		serving.certFile: "apiserver.crt", serving.keyFile: "apiserver.key",
		signer.certFile: "sa-signer.crt", signer.keyFile: "sa-signer.key",
	} {
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certDir, to), data, 0o600); err != nil {
			return err
		}
	}
	cp.env.ControlPlane.APIServer.SecureServing.CA = ca.certPEM()
	return nil
}

// forwardToAPIServer lets pods reach the apiserver at the `kubernetes` Service and at its
// advertised endpoint (podnetwork.go).
func (cp *ControlPlane) forwardToAPIServer(context.Context) error {
	apiPort, err := strconv.Atoi(cp.env.ControlPlane.APIServer.SecureServing.Port)
	if err != nil {
		return fmt.Errorf("the apiserver's port %q: %w", cp.env.ControlPlane.APIServer.SecureServing.Port, err)
	}
	if err := cp.network.forward(kubernetesServiceIP, 443, apiPort); err != nil {
		return err
	}
	return cp.network.forward(cp.network.host, apiPort, apiPort)
}

// etcdWithClientCertificates is etcd serving its API over TLS to clients with a certificate of
// its own CA only, which the apiserver gets. envtest starts etcd on plain HTTP, which anybody
// on this machine could then read and write the whole cluster through, pods on the host's
// network (kpack's build pods) included. envtest's own health check, which has no
// certificate, goes to etcd's metrics listener, which serves /health and /metrics only.
func (cp *ControlPlane) etcdWithClientCertificates(dir string, log *os.File) (*envtest.Etcd, error) {
	ca, err := newLocalCA(dir, "cf-hnc local etcd CA")
	if err != nil {
		return nil, err
	}
	server, err := ca.issue("server", "etcd", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	client, err := ca.issue("apiserver-etcd-client", "kube-apiserver")
	if err != nil {
		return nil, err
	}
	clientAddr, healthAddr, err := freeLoopbackAddrs()
	if err != nil {
		return nil, err
	}
	etcd := &envtest.Etcd{Out: log, Err: log, URL: &url.URL{Scheme: "http", Host: healthAddr}}
	etcd.Configure().
		Set("listen-client-urls", "https://"+clientAddr).
		Set("advertise-client-urls", "https://"+clientAddr).
		Set("listen-metrics-urls", "http://"+healthAddr).
		Set("cert-file", server.certFile).
		Set("key-file", server.keyFile).
		Set("trusted-ca-file", ca.caFile).
		Set("client-cert-auth", "true")
	cp.env.ControlPlane.APIServer.Configure().
		Set("etcd-servers", "https://"+clientAddr).
		Set("etcd-cafile", ca.caFile).
		Set("etcd-certfile", client.certFile).
		Set("etcd-keyfile", client.keyFile)
	return etcd, nil
}
