package manager

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderLock is the Lease that the replicas elect their leader with, held under identity.
// controller-runtime's own lock adds a random suffix to the host name, so a manager that
// restarts in the same pod must wait for the lease it held to expire; with the pod's name it
// renews that lease at once.
func LeaderLock(config *rest.Config, namespace, name, identity string) (resourcelock.Interface, error) {
	clients, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(config), "leader-election"))
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, clients.CoreV1(), clients.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity})
}
