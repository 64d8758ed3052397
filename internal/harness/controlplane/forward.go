package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// In a cluster an operator exposes a Service (a load balancer, an ingress); here the control
// plane forwards a loopback port of this machine to a Service's ready endpoints, as `kubectl
// port-forward service/...` would, but to any ready endpoint per connection, so that a pod being
// replaced does not break the forward. It reads the endpoints from an informer of the Service's
// EndpointSlices.

// serviceForward forwards a loopback address to a Service's ready endpoints.
type serviceForward struct {
	listener net.Listener
	slices   discoverylisters.EndpointSliceNamespaceLister
	selector labels.Selector
	portName string
	stop     context.CancelFunc
	next     atomic.Uint64
	wg       sync.WaitGroup

	mu sync.Mutex
	// open are the connections being forwarded, both ends, which close ends: a client's
	// kept-alive connection would otherwise hold the forward forever.
	open map[net.Conn]bool
}

// forwardService forwards address (a loopback address, or "" for a free loopback port) to the
// ready endpoints of the Service's port portName, once the informer of its endpoints is synced.
func (cp *ControlPlane) forwardService(ctx context.Context, namespace, service, portName, address string) (*serviceForward, error) {
	if address == "" {
		var err error
		if address, _, err = freeLoopbackAddrs(); err != nil {
			return nil, err
		}
	}
	if host, _, err := net.SplitHostPort(address); err != nil || host != "127.0.0.1" {
		return nil, fmt.Errorf("a Service is forwarded on loopback only, not at %q", address)
	}
	selector := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service})
	factory := informers.NewSharedInformerFactoryWithOptions(cp.platform.clientset, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }))
	informer := factory.Discovery().V1().EndpointSlices()
	lister := informer.Lister()
	informerCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	factory.Start(informerCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		stop()
		return nil, fmt.Errorf("the endpoints of Service %s/%s did not sync", namespace, service)
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		stop()
		return nil, fmt.Errorf("forwarding Service %s/%s: %w", namespace, service, err)
	}
	f := &serviceForward{listener: listener, slices: lister.EndpointSlices(namespace), selector: selector,
		portName: portName, stop: stop, open: map[net.Conn]bool{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.serve()
	}()
	return f, nil
}

// address is where the forward listens.
func (f *serviceForward) address() string { return f.listener.Addr().String() }

func (f *serviceForward) close() {
	_ = f.listener.Close()
	f.mu.Lock()
	for conn := range f.open {
		_ = conn.Close()
	}
	f.open = nil
	f.mu.Unlock()
	f.wg.Wait()
	f.stop()
}

// track remembers conn until it is done, or closes it at once if the forward is closing.
func (f *serviceForward) track(conn net.Conn) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		_ = conn.Close()
		return func() {}
	}
	f.open[conn] = true
	return func() {
		f.mu.Lock()
		delete(f.open, conn)
		f.mu.Unlock()
		_ = conn.Close()
	}
}

// serve accepts connections until the listener closes, and joins each to a ready endpoint of the
// Service, round robin.
func (f *serviceForward) serve() {
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.track(conn)()
			endpoints := f.readyEndpoints()
			if len(endpoints) == 0 {
				return
			}
			upstream, err := net.DialTimeout("tcp", endpoints[f.next.Add(1)%uint64(len(endpoints))], 5*time.Second)
			if err != nil {
				return
			}
			defer f.track(upstream)()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(upstream, conn); done <- struct{}{} }()
			go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
			<-done
		}()
	}
}

// readyEndpoints are the addresses of the Service's ready endpoints at its port.
func (f *serviceForward) readyEndpoints() []string {
	slices, err := f.slices.List(f.selector)
	if err != nil {
		return nil
	}
	var addrs []string
	for _, s := range slices {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == f.portName && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				for _, a := range e.Addresses {
					addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(int(port))))
				}
			}
		}
	}
	return addrs
}
