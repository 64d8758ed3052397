package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	cp.env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	// Certificates in a directory of this run, not a random one that envtest replaces on a
	// restart: clients keep trusting the apiserver across RestartAPIServer.
	certDir := filepath.Join(cp.paths.workDir, "apiserver")
	if err := os.RemoveAll(certDir); err != nil {
		return err
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	cp.env.ControlPlane.APIServer = &envtest.APIServer{Out: apiserverLog, Err: apiserverLog, CertDir: certDir}
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

// crds returns cf-hnc's CRDs and those of HNC and kpack, the latter without their conversion
// webhook: no kpack webhook runs here, and every client uses the storage version.
func (cp *ControlPlane) crds() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(cp.paths.config("crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s: run `make manifests`", cp.paths.config("crd", "bases"))
	}
	hncDir, err := cp.paths.moduleDir(hncModule)
	if err != nil {
		return nil, err
	}
	hncFiles, err := filepath.Glob(filepath.Join(hncDir, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	files = append(files, hncFiles...)
	kpackDir, err := cp.paths.moduleDir(kpackModule)
	if err != nil {
		return nil, err
	}
	for _, name := range kpackCRDs {
		files = append(files, filepath.Join(kpackDir, "config", name))
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
