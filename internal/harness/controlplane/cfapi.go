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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The CF API runs as config/cf-api deploys it: two pods behind the Service cf-hnc-api, serving
// HTTPS with the certificate of the Secret cf-hnc-api-tls. In a cluster an operator exposes the
// Service (a load balancer, an ingress); here the control plane forwards a loopback port of
// this machine to it, as `kubectl port-forward service/cf-hnc-api` would, but to any ready
// endpoint per connection, so that a pod being replaced does not break the forward.

// cfAPIPort is the name of the CF API Service's port.
const cfAPIPort = "https"

// serviceForward forwards a loopback address to a Service's ready endpoints.
type serviceForward struct {
	listener net.Listener
	next     atomic.Uint64
	wg       sync.WaitGroup

	mu sync.Mutex
	// open are the connections being forwarded, both ends, which close ends: a client's
	// kept-alive connection would otherwise hold the forward forever.
	open map[net.Conn]bool
}

// exposeCFAPI forwards Options.CFAPIAddress (or a free loopback port) to the CF API Service.
func (cp *ControlPlane) exposeCFAPI(context.Context) error {
	address := cp.opts.CFAPIAddress
	if address == "" {
		var err error
		if address, _, err = freeLoopbackAddrs(); err != nil {
			return err
		}
	}
	if host, _, err := net.SplitHostPort(address); err != nil || host != "127.0.0.1" {
		return fmt.Errorf("the CF API is forwarded on loopback only, not at %q", address)
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("forwarding the CF API: %w", err)
	}
	f := &serviceForward{listener: listener, open: map[net.Conn]bool{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.serve(cp.Client, install.Namespace, install.APIDeployment, cfAPIPort)
	}()
	cp.cfAPIForward = f
	return nil
}

func (f *serviceForward) close() {
	_ = f.listener.Close()
	f.mu.Lock()
	for conn := range f.open {
		_ = conn.Close()
	}
	f.open = nil
	f.mu.Unlock()
	f.wg.Wait()
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
func (f *serviceForward) serve(c client.Client, namespace, service, portName string) {
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.track(conn)()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			endpoints, err := readyEndpoints(ctx, c, namespace, service, portName)
			cancel()
			if err != nil || len(endpoints) == 0 {
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

// readyEndpoints are the addresses of the Service's ready endpoints at its port portName.
func readyEndpoints(ctx context.Context, c client.Client, namespace, service, portName string) ([]string, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range slices.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == portName && p.Port != nil {
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
	return addrs, nil
}

// CFAPIURL is the address of the CF API, for `cf api`; empty when it does not run.
func (cp *ControlPlane) CFAPIURL() string {
	if cp.cfAPIForward == nil {
		return ""
	}
	return "https://" + cp.cfAPIForward.listener.Addr().String()
}

// CFAPICA is the file of the CA that signed the CF API's certificate, for a client of CFAPIURL
// (`SSL_CERT_FILE=<file> cf api ...`).
func (cp *ControlPlane) CFAPICA() string { return cp.cfAPICA }
