package controlplane

import "path/filepath"

// kubeletClientUser is who the apiserver is when it calls the kubelet (pod logs, exec).
const kubeletClientUser = "kube-apiserver-kubelet-client"

// kubeletClient is the apiserver's client certificate for the kubelet's API, and the CA the
// kubelet checks it with. It exists before the apiserver starts, which names it in its flags.
type kubeletClient struct {
	caFile string
	keyPair
}

// newKubeletClient makes a CA and a client certificate for kubeletClientUser in dir.
func newKubeletClient(dir string) (kubeletClient, error) {
	ca, err := newLocalCA(filepath.Clean(dir), "cf-hnc local kubelet-client CA")
	if err != nil {
		return kubeletClient{}, err
	}
	pair, err := ca.issue("kubelet-client", kubeletClientUser)
	return kubeletClient{caFile: ca.caFile, keyPair: pair}, err
}
