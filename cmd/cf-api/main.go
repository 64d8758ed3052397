package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"code.cloudfoundry.org/cf-hnc/cfapi"
)

// shutdownTimeout is how long the requests in flight may take to finish on SIGTERM.
const shutdownTimeout = 10 * time.Second

// checkTransport refuses plain HTTP beyond loopback: the cf CLI sends a token, or a client
// certificate with its private key, in every request.
func (o options) checkTransport() error {
	if (o.certFile == "") != (o.keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if o.certFile != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(o.address)
	if err != nil {
		return fmt.Errorf("--address %q: %w", o.address, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--address %q is not a loopback address: serve HTTPS there (--tls-cert-file and --tls-key-file), since the cf CLI sends credentials with every request", o.address)
	}
	return nil
}

// options are the command's flags.
type options struct {
	address, certFile, keyFile, externalURL string
	qps                                     float64
	burst                                   int
	scratchSize                             byteSize
	api                                     cfapi.Config
}

// byteSize is a number of bytes given as a Kubernetes quantity (1Gi) or a plain number.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("not a size: %w", err)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%s: the scratch space must hold some bytes", s)
	}
	*b = byteSize(q.Value())
	return nil
}

func main() {
	o := options{scratchSize: cfapi.DefaultScratchBytes}
	flag.StringVar(&o.address, "address", "127.0.0.1:9000", "Address to serve the API on. Plain HTTP (no --tls-cert-file) is served on loopback only: the cf CLI sends credentials in every request.")
	flag.StringVar(&o.certFile, "tls-cert-file", "", "PEM certificate to serve HTTPS with (with --tls-key-file).")
	flag.StringVar(&o.keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file.")
	flag.StringVar(&o.externalURL, "external-url", "", "The API's URL as the cf CLI reaches it, for the absolute links it follows (e.g. https://api.cf.example.com). Empty: each request's scheme and Host.")
	flag.StringVar(&o.api.RootNamespace, "root-namespace", "cf", "The root namespace, which holds the CFOrgs.")
	flag.DurationVar(&o.api.SessionTTL, "session-ttl", 30*time.Second, "How long a user's identity is remembered per credential (a revoked credential keeps its identity that long; every read and write still uses it).")
	flag.DurationVar(&o.api.ReadyTimeout, "ready-timeout", 30*time.Second, "How long creating an org or a space waits for its namespace before it answers with a warning.")
	flag.DurationVar(&o.api.DeleteTimeout, "delete-timeout", 5*time.Minute, "How long deleting an org or a space may take before its job fails.")
	flag.StringVar(&o.api.ScratchDir, "scratch-dir", os.TempDir(), "Directory where uploads are staged while they are converted and pushed (in a pod, a writable volume: the root file system is read-only).")
	flag.Var(&o.scratchSize, "scratch-size", "Bytes that all the uploads of this replica may hold in --scratch-dir at once, as a quantity (1Gi, 512Mi) or a number; an upload that finds no room gets 503 with Retry-After.")
	flag.Float64Var(&o.qps, "kube-api-qps", 50, "Requests per second that the API's own reads may make to the apiserver, sustained.")
	flag.IntVar(&o.burst, "kube-api-burst", 100, "Requests that the API's own reads may make to the apiserver in a burst.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	o.api.Log = ctrl.Log.WithName("cf-api")
	if err := run(o); err != nil {
		o.api.Log.Error(err, "cf-api stopped")
		os.Exit(1)
	}
}

func run(o options) error {
	if err := o.checkTransport(); err != nil {
		return err
	}
	o.api.ScratchBytes = int64(o.scratchSize)
	if o.externalURL != "" {
		u, err := url.Parse(o.externalURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("--external-url %q is not an absolute URL", o.externalURL)
		}
		o.api.ExternalURL = u
	}
	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	config.QPS, config.Burst = float32(o.qps), o.burst

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	handler, err := cfapi.New(ctx, config, o.api)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", o.address)
	if err != nil {
		return err
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() {
		if o.certFile != "" {
			served <- server.ServeTLS(listener, o.certFile, o.keyFile)
		} else {
			served <- server.Serve(listener)
		}
	}()
	o.api.Log.Info("serving the CF API", "address", listener.Addr().String(), "tls", o.certFile != "")
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return server.Shutdown(shutdown)
}
