// Package scheme assembles the scheme that the manager, the command-line tool and the tests
// share: Kubernetes' own types, cf-hnc's API, HNC's API, kpack's API and the Gateway API.
package scheme

import (
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// New returns a scheme with every type cf-hnc reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(cfv1alpha1.AddToScheme(s))
	utilruntime.Must(hncv1alpha2.AddToScheme(s))
	utilruntime.Must(kpackv1alpha2.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}
