// Command bench measures cf-hnc side by side with its floors on one local control plane (the
// same binaries and HNC flags as make run and the tests, with a real node that runs kpack's
// build pods): the apiserver creating namespaces, HNC alone propagating what cf-hnc asks of it
// (the same tree and labels, the same copies), and cf-hnc making spaces BuildReady; then
// credential rotation, apps pushed and really built, a stack run-image fix that rebases them,
// a quiet minute and a manager restart. It writes JSON, a PNG of the latency distributions and
// docs/benchmarks.md.
//
//	make bench BENCH_FLAGS="-orgs 2 -spaces 20"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

// config is what the flags set.
type config struct {
	orgs, spaces int
	quiet        int
	apps         int
	workers      int
	idle         time.Duration
	timeout      time.Duration
	out, doc     string
	from         string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.orgs, "orgs", 10, "Orgs to create.")
	flag.IntVar(&cfg.spaces, "spaces", 100, "Spaces per org.")
	flag.IntVar(&cfg.quiet, "quiet", 20, "New spaces created one at a time once every space is there, for the quiet latency.")
	flag.IntVar(&cfg.apps, "apps", 100, "Apps pushed across the orgs before the stack fix, which rebases them.")
	flag.IntVar(&cfg.workers, "workers", 10, "Clients creating objects at once in the bulk phases (the same for every system).")
	flag.DurationVar(&cfg.idle, "idle", time.Minute, "How long the steady state is watched for writes.")
	flag.DurationVar(&cfg.timeout, "timeout", time.Hour, "The whole run stops after this long.")
	flag.StringVar(&cfg.out, "out", ".local/bench", "Directory for the JSON and the log (and the PNG when there is no report).")
	flag.StringVar(&cfg.doc, "doc", "docs/benchmarks.md", "Where to write the report, with its PNG beside it; empty for none.")
	flag.StringVar(&cfg.from, "from", "", "Run nothing: write the report and the PNG again from this results.json of an earlier run.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	do := func() error {
		return run(ctx, cfg, strings.Join(append([]string{"go run ./bench"}, os.Args[1:]...), " "))
	}
	if cfg.from != "" {
		do = func() error { return reportAgain(cfg) }
	}
	if err := do(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, command string) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(cfg.out, "bench.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	started := time.Now()
	say("starting the local control plane (logs in .local/bench-run/logs)")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		WorkDir:           ".local/bench-run",
		ControllerManager: true,
		HNC:               true,
		Kpack:             true,
		Node:              true,
		DefaultBuilder:    true,
		CFHNC:             true,
		Gateway:           true,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	watched, err := observe(ctx, cp.Config)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, cp: cp, k8s: cp.Client, seen: watched}
	r := &Results{Command: command, Machine: machineOf(started), Orgs: cfg.orgs, SpacesPerOrg: cfg.spaces, Workers: cfg.workers}
	if r.HNCFlags, err = hncFlags(); err != nil {
		return err
	}

	phases := []struct {
		name string
		run  func(context.Context, *Results) error
	}{
		{phaseFloor, b.floor},
		{phaseHNC, b.hncAlone},
		{phaseStackNoSpaces, func(ctx context.Context, r *Results) error { return b.stackFix(ctx, &r.StackNoSpaces) }},
		{phaseCFHNC, b.cfhnc},
		{phaseRotation, b.rotation},
		{phaseApps, b.deployApps},
		{phaseStack, func(ctx context.Context, r *Results) error { return b.stackFix(ctx, &r.Stack) }},
		{phaseSteady, b.steady},
		{phaseRestart, b.restart},
	}
	for _, p := range phases {
		say(p.name)
		phaseStart := time.Now()
		if err := p.run(ctx, r); err != nil {
			r.Failed = fmt.Sprintf("%s: %v", p.name, err)
			say("FAILED: " + r.Failed + " (logs in " + cp.LogDir() + ")")
			break
		}
		if err := cp.Healthy(); err != nil {
			r.Failed = fmt.Sprintf("%s: %v", p.name, err)
			break
		}
		r.Completed = append(r.Completed, p.name)
		say(fmt.Sprintf("  done in %s", time.Since(phaseStart).Round(time.Millisecond)))
	}
	r.Duration = time.Since(started).Round(time.Second).String()
	return report(cfg, r)
}

// The phases of a run, in order.
const (
	phaseFloor         = "raw apiserver floor: namespace creates"
	phaseHNC           = "HNC alone: the same tree and copies, without cf-hnc"
	phaseStackNoSpaces = "stack fix with no space"
	phaseCFHNC         = "cf-hnc: orgs, bulk spaces, quiet spaces"
	phaseRotation      = "rotation"
	phaseApps          = "apps pushed, each running its droplet"
	phaseStack         = "stack fix with every space and app"
	phaseSteady        = "steady state"
	phaseRestart       = "manager restart"
)

// report writes the JSON, the PNG and the Markdown, whatever the run reached.
func report(cfg config, r *Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "results.json"), data, 0o644); err != nil {
		return err
	}
	// The PNG goes beside the report, which links it, so that both can be committed together.
	png := filepath.Join(cfg.out, "latencies.png")
	if cfg.doc != "" {
		png = strings.TrimSuffix(cfg.doc, filepath.Ext(cfg.doc)) + ".png"
	}
	if err := plotLatencies(r, png); err != nil {
		return err
	}
	if cfg.doc != "" {
		previous, err := os.ReadFile(cfg.doc)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		report := withOtherSections(markdown(r, filepath.Base(png)), string(previous))
		if err := os.WriteFile(cfg.doc, []byte(report), 0o644); err != nil {
			return err
		}
	}
	say("wrote " + filepath.Join(cfg.out, "results.json") + ", " + png + " and " + cfg.doc)
	if r.Failed != "" {
		return fmt.Errorf("%s", r.Failed)
	}
	return nil
}

// reportAgain writes the report of an earlier run from its results.json, as the run wrote it.
func reportAgain(cfg config) error {
	data, err := os.ReadFile(cfg.from)
	if err != nil {
		return err
	}
	r := &Results{}
	if err := json.Unmarshal(data, r); err != nil {
		return fmt.Errorf("%s: %w", cfg.from, err)
	}
	cfg.out = filepath.Dir(cfg.from)
	return report(cfg, r)
}

func say(msg string) {
	fmt.Printf("%s %s\n", time.Now().Format("15:04:05"), msg)
}

// bench is one run on one control plane.
type bench struct {
	cfg  config
	cp   *controlplane.ControlPlane
	k8s  client.Client
	seen *observer
	// orgs are the cf-hnc orgs' GUIDs, and spaces their spaces' GUIDs by org.
	orgs   []string
	spaces map[string][]string
	// apps were pushed before the stack fix.
	apps []*cfv1alpha1.CFApp
}

// machineOf describes where the run happened.
func machineOf(started time.Time) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: started.UTC().Format(time.RFC3339)}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kib); err == nil {
			m.MemoryGiB = float64(kib) / 1024 / 1024
		}
	}
	return m
}

// hncFlags are the HNC manager flags that the local control plane runs HNC with: those of
// config/hnc, with its own addresses.
func hncFlags() ([]string, error) {
	data, err := os.ReadFile("config/hnc/manager-args.yaml")
	if err != nil {
		return nil, err
	}
	var patch struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &patch); err != nil {
		return nil, err
	}
	if len(patch.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("config/hnc/manager-args.yaml has no container")
	}
	return patch.Spec.Template.Spec.Containers[0].Args, nil
}
