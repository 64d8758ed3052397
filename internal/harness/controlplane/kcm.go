package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startControllerManager runs the kube-controller-manager controllers that a cluster without
// nodes still needs: namespace (finishes deleting namespaces, which HNC's cascading deletion
// waits for), garbagecollector (owned objects), serviceaccount (each namespace's default
// ServiceAccount), clusterrole-aggregation (fills the built-in admin, edit and view roles,
// and cf-hnc's aggregated CF roles), statefulset (makes the pods of app instances, which a
// node then runs; without one they stay pending, and the suites without a node see that) and
// resourcequota (computes each ResourceQuota's usage and limits into its status: the apiserver
// enforces only the limits in a quota's status, so without it no quota holds) and
// validatingadmissionpolicy-status-controller (type-checks each ValidatingAdmissionPolicy into
// its status.typeChecking, where a policy's warnings show).
func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	binary, err := cp.paths.binary("kube-controller-manager")
	if err != nil {
		return err
	}
	kubeconfig, err := cp.userKubeconfig("kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
	}
	controllers := "namespace,garbagecollector,serviceaccount,clusterrole-aggregation,statefulset,resourcequota,validatingadmissionpolicy-status-controller"
	if cp.opts.Node {
		// With a node: its lifecycle (else it keeps its not-ready taint), the garbage
		// collection of pods of a gone node, each namespace's kube-root-ca.crt (which every
		// pod's ServiceAccount token volume mounts, and in-cluster clients trust the apiserver
		// with), and what runs the platform's Deployments: their ReplicaSets and pods, the
		// EndpointSlices of their Services (through which the apiserver calls webhooks), and
		// the status of the manager's PodDisruptionBudget, and the node's NetworkPolicy
		// enforcer's DaemonSet.
		controllers += ",nodelifecycle,podgc,root-ca-cert-publisher,deployment,replicaset,daemonset,endpointslice,disruption"
		caFile := filepath.Join(cp.paths.workDir, "apiserver", "ca.crt")
		if err := os.WriteFile(caFile, cp.env.ControlPlane.APIServer.SecureServing.CA, 0o644); err != nil {
			return err
		}
		args = append(args, "--root-ca-file="+caFile)
	}
	kcm, err := startComponent("kube-controller-manager", cp.paths.logDir(), binary, append(args, "--controllers="+controllers), nil)
	if err != nil {
		return err
	}
	cp.track(kcm)
	// The serviceaccount controller creating the default namespace's ServiceAccount shows that
	// the controllers are running.
	return kcm.waitUntil(ctx, time.Minute, "ready", func(ctx context.Context) error {
		return cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	})
}
