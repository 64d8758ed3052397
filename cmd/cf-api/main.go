package main

import (
	"context"
	"crypto/tls"
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
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"code.cloudfoundry.org/cf-hnc/cfapi"
)

// shutdownTimeout is how long the requests in flight may take to finish on SIGTERM.
const shutdownTimeout = 10 * time.Second

// The bounds of the server's connections, before a request reaches the API (review 3, N8):
// headers must come within readHeaderTimeout and hold at most maxHeaderBytes (a token or a
// client certificate, and a URL with a list's filters), and a connection idle between requests
// is closed after --idle-timeout. The API bounds each request's body and answer itself
// (cfapi.Config.ReadTimeout).
const (
	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 64 << 10
)

// checkTransport refuses plain HTTP beyond loopback: the cf CLI sends a token, or a client
// certificate with its private key, in every request. Beyond loopback the API's links come from
// --external-url, never from a request's Host: a cache in front of the API that keys its root
// document without the Host would otherwise hand every cf CLI the links of whoever asked first,
// and the CLI sends its credentials where they point (review 3, N17).
func (o options) checkTransport() error {
	if (o.certFile == "") != (o.keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	host, _, err := net.SplitHostPort(o.address)
	if err != nil {
		return fmt.Errorf("--address %q: %w", o.address, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	if o.certFile == "" {
		return fmt.Errorf("--address %q is not a loopback address: serve HTTPS there (--tls-cert-file and --tls-key-file), since the cf CLI sends credentials with every request", o.address)
	}
	if o.externalURL == "" {
		return fmt.Errorf("--address %q is not a loopback address: give the API's URL as the cf CLI reaches it with --external-url, "+
			"which the links the CLI follows name, rather than each request's Host header", o.address)
	}
	return nil
}

// options are the command's flags.
type options struct {
	address, certFile, keyFile, externalURL string
	idleTimeout                             time.Duration
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
	flag.StringVar(&o.certFile, "tls-cert-file", "", "PEM certificate to serve HTTPS with (with --tls-key-file); served anew when the file changes, as a renewed Secret's does.")
	flag.StringVar(&o.keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file.")
	flag.StringVar(&o.externalURL, "external-url", "", "The API's URL as the cf CLI reaches it, for the absolute links it follows (e.g. https://api.cf.example.com); required beyond loopback. Empty on loopback: each request's scheme and Host.")
	flag.StringVar(&o.api.RootNamespace, "root-namespace", "cf", "The root namespace, which holds the CFOrgs.")
	flag.DurationVar(&o.api.SessionTTL, "session-ttl", 30*time.Second, "How long a user's identity is remembered per credential (a revoked credential keeps its identity that long; every read and write still uses it).")
	flag.DurationVar(&o.api.ReadyTimeout, "ready-timeout", 30*time.Second, "How long creating an org or a space waits for its namespace before it answers with a warning.")
	flag.DurationVar(&o.api.DeleteTimeout, "delete-timeout", 5*time.Minute, "How long deleting an org or a space may take before its job fails.")
	flag.DurationVar(&o.api.ReadTimeout, "read-timeout", cfapi.DefaultReadTimeout, "How long a request's body may take to come; an upload may take longer, but may pause no longer than this, and must come at 64 KiB/s on average after it.")
	flag.DurationVar(&o.idleTimeout, "idle-timeout", 2*time.Minute, "How long a connection may stay open without a request.")
	flag.StringVar(&o.api.ScratchDir, "scratch-dir", os.TempDir(), "Directory where uploads are staged while they are converted and pushed (in a pod, a writable volume: the root file system is read-only).")
	flag.Var(&o.scratchSize, "scratch-size", "Bytes that all the uploads of this replica may hold in --scratch-dir at once, as a quantity (1Gi, 512Mi) or a number; an upload that finds no room gets 503 with Retry-After.")
	flag.IntVar(&o.api.MaxLists, "max-lists", cfapi.DefaultMaxLists, "Lists read as the user across spaces (apps, packages, processes, droplets, roles) that this replica serves at once; one user may hold half of them. A list waits 10 s for a slot, then gets 503 with Retry-After.")
	flag.IntVar(&o.api.MaxUploads, "max-uploads", cfapi.DefaultMaxUploads, "Uploads that this replica serves at once; one user may hold half of them (at least one).")
	flag.Float64Var(&o.api.Reviews.PerSecond, "credential-reviews-per-second", 20, "Credentials not seen lately that the API reviews per second (a SelfSubjectReview each, sent before the apiserver can shed load); beyond, 429 with Retry-After. Sessions and refusals already known are not reviewed.")
	flag.IntVar(&o.api.Reviews.Burst, "credential-review-burst", 40, "Credentials not seen lately that the API reviews at once.")
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
	if err := o.checkLimits(); err != nil {
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
	o.api.Log.Info("serving the CF API", "address", listener.Addr().String(), "tls", o.certFile != "")
	return o.serve(ctx, listener, handler)
}

// checkLimits refuses bounds that would let nothing through.
func (o options) checkLimits() error {
	switch {
	case o.api.MaxLists < 1, o.api.MaxUploads < 1:
		return errors.New("--max-lists and --max-uploads must be at least 1")
	case o.api.Reviews.PerSecond <= 0, o.api.Reviews.Burst < 1:
		return errors.New("--credential-reviews-per-second must be above 0, and --credential-review-burst at least 1")
	case o.idleTimeout <= 0, o.api.ReadTimeout <= 0:
		return errors.New("--idle-timeout and --read-timeout must be above 0")
	}
	return nil
}

// serve serves handler on listener until ctx ends, then lets the requests in flight finish for
// shutdownTimeout. With --tls-cert-file, every TLS handshake is served the certificate of the
// files as they are now: the kubelet updates a Secret's volume when the Secret is renewed
// (cert-manager, an operator), and a certificate read once at start would expire in service.
func (o options) serve(ctx context.Context, listener net.Listener, handler http.Handler) error {
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	if o.certFile != "" {
		certificates, err := certwatcher.New(o.certFile, o.keyFile)
		if err != nil {
			return err
		}
		go func() {
			if err := certificates.Start(ctx); err != nil {
				o.api.Log.Error(err, "watching the serving certificate stopped")
			}
		}()
		server.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certificates.GetCertificate}
	}
	served := make(chan error, 1)
	go func() {
		if server.TLSConfig != nil {
			served <- server.ServeTLS(listener, "", "") // the certificate comes from GetCertificate
		} else {
			served <- server.Serve(listener)
		}
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return server.Shutdown(shutdown)
}
