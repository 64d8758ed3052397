package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// component is one process of the local control plane, with its own log file.
type component struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	env     []string
	exited  chan struct{}
	waitErr error
}

// startComponent starts binary with its output in <logDir>/<name>.log. The process gets its own
// process group, so that stopping it also stops anything it started, and dies with this
// process (Pdeathsig) so that a killed test run leaves no orphan behind.
func startComponent(name, logDir, binary string, args, env []string) (*component, error) {
	return start(name, filepath.Join(logDir, name+".log"), os.O_TRUNC, binary, args, env)
}

// restart starts the component's process again, as it was started, after it stopped; its log
// continues in the same file.
func (c *component) restart() (*component, error) {
	select {
	case <-c.exited:
	default:
		return nil, fmt.Errorf("%s is still running (pid %d)", c.name, c.pid())
	}
	return start(c.name, c.logPath, os.O_APPEND, c.cmd.Path, c.cmd.Args[1:], c.env)
}

func start(name, logPath string, truncateOrAppend int, binary string, args, env []string) (*component, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|truncateOrAppend, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: cannot start %s: %w", name, binary, err)
	}
	c := &component{name: name, logPath: logPath, cmd: cmd, env: env, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.exited)
	}()
	return c, nil
}

// pid is the process id of the component.
func (c *component) pid() int { return c.cmd.Process.Pid }

// alive returns an error naming the component and its log if the process has exited.
func (c *component) alive() error {
	select {
	case <-c.exited:
		return c.failed(fmt.Errorf("exited unexpectedly (%v)", c.waitErr))
	default:
		return nil
	}
}

// failed wraps err with the component's name, its log file and the log's last lines, so that a
// failing component is found without digging.
func (c *component) failed(err error) error {
	return fmt.Errorf("%s %w; see %s:\n%s", c.name, err, c.logPath, tail(c.logPath, 15))
}

// kill ends the component's process group at once, as a crash or a node failure would.
func (c *component) kill() {
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	<-c.exited
}

// stop sends SIGTERM to the component's process group, then SIGKILL after grace.
func (c *component) stop(grace time.Duration) {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
		<-c.exited
	}
}

// waitUntil polls ready until it succeeds, the component exits or timeout passes.
func (c *component) waitUntil(ctx context.Context, timeout time.Duration, what string, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if err := c.alive(); err != nil {
			return err
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.failed(fmt.Errorf("did not become %s within %s (last check: %v)", what, timeout, last))
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// httpOK is a readiness check for a plain HTTP health endpoint.
func httpOK(url string) func(context.Context) error {
	return healthOK(http.DefaultClient, url)
}

// selfSignedLoopback trusts any certificate: for the health endpoints of components that sign
// their own serving certificate on loopback, where a health check needs no proof of identity.
var selfSignedLoopback = &http.Client{Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health checks only
}}

// httpsOK is a readiness check for the HTTPS health endpoint of a component on loopback.
func httpsOK(url string) func(context.Context) error {
	return healthOK(selfSignedLoopback, url)
}

func healthOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
		}
		return nil
	}
}

// tail returns the last n lines of a file, indented, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// freeLoopbackAddrs returns two "127.0.0.1:<port>" addresses with ports that were free a
// moment ago: every component here serves probes or metrics next to its main port.
func freeLoopbackAddrs() (first, second string, err error) {
	var addrs [2]string
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs[0], addrs[1], nil
}

// port returns the port of a "host:port" address.
func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
