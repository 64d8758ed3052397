// Command staticfile-server is the web server of the apps that cf-hnc's staticfile buildpack
// stages: it serves a directory (buildpacks.StaticFiles) on $PORT, 8080 by default, and logs
// each request to stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

// shutdownTimeout bounds the wait for requests in flight after SIGTERM, well within the
// kubelet's default grace period of 30 seconds.
const shutdownTimeout = 5 * time.Second

func main() {
	root := flag.String("root", ".", "the directory to serve")
	// All interfaces by default: the server has its pod's network namespace to itself.
	host := flag.String("host", "0.0.0.0", "the address to listen on")
	flag.Parse()
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, *root, net.JoinHostPort(*host, port)); err != nil {
		fmt.Fprintln(os.Stderr, "staticfile-server:", err)
		os.Exit(1)
	}
}

// serve serves root on address until ctx ends, then lets requests in flight finish.
func serve(ctx context.Context, root, address string) error {
	site, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer site.Close()
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	server := &http.Server{
		Handler:           buildpacks.LogRequests(buildpacks.StaticFiles(site.FS()), os.Stdout),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Printf("staticfile-server: serving %s on %s\n", root, listener.Addr())

	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return server.Shutdown(shutdown)
}
