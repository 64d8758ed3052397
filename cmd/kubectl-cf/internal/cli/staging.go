package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/logtext"
)

// The states of a build, as the CF API names them.
const (
	stagingState = string(cfv1alpha1.BuildStaging)
	stagedState  = string(cfv1alpha1.BuildStaged)
	failedState  = string(cfv1alpha1.BuildFailed)
)

// progress is what a person is shown of a build or of an app starting: its state, the reason,
// and a detail (the kpack step a build is at; how many instances run).
type progress struct {
	state, reason, detail string
	finished              bool
}

func (p progress) String() string {
	return strings.TrimRight(fmt.Sprintf("%-8s %s: %s", p.state, p.reason, p.detail), ": ")
}

// progressOf describes a build: while kpack builds it, the step of its kpack Build (steps are
// the build pod's step names, when known), else cf-hnc's reason and message.
func progressOf(build *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build, steps []string) progress {
	buildState, _ := build.State()
	state := string(buildState)
	// The condition as it is, also one of an earlier generation: it says how the build goes.
	succeeded := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition)
	p := progress{state: state, finished: state != stagingState}
	switch {
	case succeeded == nil:
		p.reason, p.detail = "Pending", "cf-hnc has not picked the build up yet"
	case state == stagedState:
		p.reason, p.detail = succeeded.Reason, "droplet "+build.Status.Droplet.Registry.Image
	case kb != nil && state == stagingState:
		p.reason, p.detail = succeeded.Reason, "kpack build "+kb.Name+stepOf(kb, steps)
	case state == stagingState:
		// The Staging condition says what a build waits for, or what kpack was asked.
		if staging := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.StagingCondition); staging != nil {
			p.reason, p.detail = staging.Reason, staging.Message
			break
		}
		p.reason, p.detail = succeeded.Reason, succeeded.Message
	default:
		p.reason, p.detail = succeeded.Reason, succeeded.Message
	}
	return p
}

// stepOf is the step a kpack Build is at: ", step 3/6 (detect)", or as far as it is known.
func stepOf(kb *kpackv1alpha2.Build, steps []string) string {
	done := kb.Status.StepsCompleted
	if len(steps) == 0 {
		if len(done) == 0 {
			return ""
		}
		return fmt.Sprintf(", %d steps done (last: %s)", len(done), done[len(done)-1])
	}
	for i, step := range steps {
		if !slices.Contains(done, step) {
			return fmt.Sprintf(", step %d/%d (%s)", i+1, len(steps), step)
		}
	}
	return fmt.Sprintf(", all %d steps done", len(steps))
}

// follower follows a CFBuild until it has finished, showing its progress.
type follower struct {
	c         client.Client
	clientset func() (kubernetes.Interface, error)
	out       io.Writer
	display   display
	// steps are the step names of the kpack Build's pod, read once per pod.
	steps    []string
	stepsPod string
}

// follow polls build until it finishes or ctx ends; it returns the finished build, or the
// error of pollProgress.
func (f *follower) follow(ctx context.Context, build *cfv1alpha1.CFBuild) (*cfv1alpha1.CFBuild, *kpackv1alpha2.Build, error) {
	var kb *kpackv1alpha2.Build
	err := pollProgress(ctx, f.display, func(ctx context.Context) (progress, error) {
		var p progress
		var err error
		kb, p, err = f.observe(ctx, build)
		return p, err
	})
	if err != nil {
		return nil, nil, err
	}
	return build, kb, nil
}

// observe reads the build and, while kpack builds it, its kpack Build.
func (f *follower) observe(ctx context.Context, build *cfv1alpha1.CFBuild) (*kpackv1alpha2.Build, progress, error) {
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(build), build); err != nil {
		return nil, progress{}, fmt.Errorf("reading build %s: %w", build.Name, err)
	}
	var kb *kpackv1alpha2.Build
	if name := build.Status.KpackBuild; name != "" {
		kb = &kpackv1alpha2.Build{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: build.Namespace, Name: name}, kb); err != nil {
			kb = nil // gone, or not readable: cf-hnc's status still says how the build goes
		}
	}
	if kb != nil && kb.Status.PodName != "" && kb.Status.PodName != f.stepsPod {
		if steps, err := podSteps(ctx, f.c, kb); err == nil {
			f.steps, f.stepsPod = steps, kb.Status.PodName
		}
	}
	return kb, progressOf(build, kb, f.steps), nil
}

// podSteps are the steps of a kpack Build's pod: its init containers, in order.
func podSteps(ctx context.Context, c client.Client, kb *kpackv1alpha2.Build) ([]string, error) {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: kb.Status.PodName}, pod); err != nil {
		return nil, err
	}
	steps := make([]string, len(pod.Spec.InitContainers))
	for i, container := range pod.Spec.InitContainers {
		steps[i] = container.Name
	}
	return steps, nil
}

// printFailure shows why a build failed: its reason and message, and each step of its kpack
// Build with its logs, or, where the cluster serves none (no kubelet), how each step ended.
func (f *follower) printFailure(ctx context.Context, build *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build) {
	_, succeeded := build.State()
	fmt.Fprintf(f.out, "Staging failed: %s: %s\n", succeeded.Reason, succeeded.Message)
	if kb == nil {
		return
	}
	steps := f.steps
	if len(steps) == 0 {
		steps = kb.Status.StepsCompleted
	}
	fmt.Fprintf(f.out, "Steps of kpack build %s (pod %s):\n", kb.Name, kb.Status.PodName)
	var rows [][]string
	var logs []string
	var logErr error
	for i, step := range steps {
		var state corev1.ContainerState
		if i < len(kb.Status.StepStates) {
			state = kb.Status.StepStates[i]
		}
		rows = append(rows, []string{"  " + step, describeStep(state)})
		if state.Terminated == nil || logErr != nil {
			continue
		}
		text, err := f.stepLog(ctx, kb, step)
		if err != nil {
			logErr = err
			continue
		}
		if text != "" {
			logs = append(logs, fmt.Sprintf("--- %s (%s)\n%s", step, describeStep(state), text))
		}
	}
	_ = writeTable(f.out, rows)
	switch {
	case logErr != nil:
		fmt.Fprintf(f.out, "The step logs cannot be read: %v\n", logErr)
	case len(logs) == 0:
		// A pod that never started a container, or whose node is gone, has none.
		fmt.Fprintf(f.out, "The cluster serves no log for the steps of pod %s.\n", kb.Status.PodName)
	}
	for _, l := range logs {
		fmt.Fprint(f.out, l)
	}
}

// stepLogLines bounds the log shown per step.
const stepLogLines = 100

// stepLog reads the last lines of a step's log from the build pod.
func (f *follower) stepLog(ctx context.Context, kb *kpackv1alpha2.Build, step string) (string, error) {
	clientset, err := f.clientset()
	if err != nil {
		return "", err
	}
	raw, err := clientset.CoreV1().Pods(kb.Namespace).GetLogs(kb.Status.PodName,
		&corev1.PodLogOptions{Container: step, TailLines: ptr.To[int64](stepLogLines)}).Do(ctx).Raw()
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return "", errors.New(status.Status().Message)
		}
		return "", err
	}
	var b strings.Builder
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	for scanner.Scan() {
		fmt.Fprintf(&b, "    %s\n", scanner.Text())
	}
	return b.String(), nil
}

// describeStep says how a step of a build pod ended, or that it has not.
func describeStep(state corev1.ContainerState) string {
	switch t := state.Terminated; {
	case t != nil && t.ExitCode == 0:
		return "completed"
	case t != nil && t.Message != "":
		// The message may be the end of the step's log: its last line says most.
		return fmt.Sprintf("exited with code %d: %s", t.ExitCode, strings.Join(logtext.LastLines(t.Message, 1), ""))
	case t != nil:
		return fmt.Sprintf("exited with code %d (%s)", t.ExitCode, t.Reason)
	case state.Running != nil:
		return "running"
	case state.Waiting != nil && state.Waiting.Message != "":
		return fmt.Sprintf("waiting (%s): %s", state.Waiting.Reason, state.Waiting.Message)
	case state.Waiting != nil:
		return fmt.Sprintf("waiting (%s)", state.Waiting.Reason)
	}
	return "did not run"
}

// printDroplet shows the droplet of a build that staged.
func printDroplet(out io.Writer, build *cfv1alpha1.CFBuild) {
	d := build.Status.Droplet
	if d == nil {
		return
	}
	buildpacks := make([]string, len(d.Buildpacks))
	for i, bp := range d.Buildpacks {
		buildpacks[i] = bp.ID + " " + bp.Version
	}
	processes := make([]string, len(d.ProcessTypes))
	for i, p := range d.ProcessTypes {
		processes[i] = p.Type + ": " + p.Command
	}
	rows := [][]string{
		{"  droplet:", build.Name},
		{"  image:", d.Registry.Image},
		{"  stack:", d.Stack},
		{"  run image:", orNone(d.RunImage)},
		{"  buildpacks:", strings.Join(buildpacks, ", ")},
		{"  processes:", strings.Join(processes, "; ")},
	}
	_ = writeTable(out, rows)
}
