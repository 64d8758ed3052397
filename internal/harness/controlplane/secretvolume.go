package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mountSecret does what a kubelet's secret volume does for the manager's pod: it keeps one file
// per key of the Secret in dir, following the Secret's changes, until stop is called. A
// kubelet takes up to a minute to follow; this follows within a fraction of a second. Errors
// go to <logDir>/secret-volume.log.
func mountSecret(c client.Client, key client.ObjectKey, dir, logDir string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		logFile, err := os.OpenFile(filepath.Join(logDir, "secret-volume.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer logFile.Close()
		var last string
		for {
			if err := syncSecret(ctx, c, key, dir); err != nil && err.Error() != last && ctx.Err() == nil {
				fmt.Fprintf(logFile, "%s %s: %v\n", time.Now().Format(time.RFC3339), key, err)
				last = err.Error()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// syncSecret writes every key of the Secret that differs from its file, each by a rename so
// that a reader never sees half a certificate.
func syncSecret(ctx context.Context, c client.Client, key client.ObjectKey, dir string) error {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, key, secret); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range secret.Data {
		path := filepath.Join(dir, name)
		if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, data) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}
