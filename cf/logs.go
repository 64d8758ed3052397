package cf

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// What an app wrote: the lines of its staging, from its build pods, and the output of its
// instances, from their pods' logs. Pod logs take a client-go clientset with the user's
// credentials: controller-runtime's client does not read them.

// StagingLine is a line of an app's staging, at a time, from a build step (an instance of the
// staging, as log-cache counts them).
type StagingLine struct {
	Time    time.Time
	Step    int
	Message string
	Error   bool
}

// StagingLines lists, as the user, the staging lines of an app: of its kpack build pods, which
// carry the app's label.
func StagingLines(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) ([]StagingLine, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(app.Namespace), client.MatchingLabels{cfv1alpha1.AppLabel: app.Name}); err != nil {
		return nil, about("Pod", err)
	}
	return stagingLines(pods.Items), nil
}

// stagingLines are the lines of the build pods' steps (their init containers), oldest first:
// when each started, and how it ended; a failed step's end of log (its termination message,
// which cf-hnc's policy has the kubelet fill from the log) follows as error lines. Each line has
// the time that the pod's status gives it, the same at every read.
func stagingLines(pods []corev1.Pod) []StagingLine {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	var lines []StagingLine
	for _, pod := range pods {
		for i, step := range pod.Status.InitContainerStatuses {
			lines = append(lines, stepLines(i, step)...)
		}
	}
	slices.SortStableFunc(lines, func(a, b StagingLine) int { return a.Time.Compare(b.Time) })
	return lines
}

func stepLines(index int, step corev1.ContainerStatus) []StagingLine {
	line := func(at time.Time, failed bool, format string, args ...any) StagingLine {
		return StagingLine{Time: at, Step: index, Message: fmt.Sprintf(format, args...), Error: failed}
	}
	switch state := step.State; {
	case state.Running != nil:
		return []StagingLine{line(state.Running.StartedAt.Time, false, "%s: started", step.Name)}
	case state.Terminated != nil:
		t := state.Terminated
		lines := []StagingLine{line(t.StartedAt.Time, false, "%s: started", step.Name)}
		if t.ExitCode == 0 {
			return append(lines, line(t.FinishedAt.Time, false, "%s: done", step.Name))
		}
		lines = append(lines, line(t.FinishedAt.Time, true, "%s: failed with exit code %d", step.Name, t.ExitCode))
		for _, l := range strings.Split(strings.TrimSpace(t.Message), "\n") {
			if l = strings.TrimRight(l, "\r"); l != "" {
				lines = append(lines, line(t.FinishedAt.Time, true, "%s", l))
			}
		}
		return lines
	}
	return nil
}

const (
	// instanceContainer is the one container of an instance's pod.
	instanceContainer = "app"
	// recentLogLines bounds what RecentLogs reads of each instance (and of its crashed run).
	recentLogLines = 200
	// logRetry is how often FollowLogs looks for new instances, and for the output of one that
	// has not started yet or has restarted.
	logRetry = time.Second
)

// LogLine is a line that an instance wrote, and which instance: Source names it as the cf CLI
// does, [APP/PROC/WEB/0].
type LogLine struct {
	Time   time.Time
	Source string
	Text   string
}

// InstancePods lists, as the user, the pods of an app's instances, ordered as the instances are
// shown: by process type (web first), then index. The app's build pods carry the app's label
// too, but no process.
func InstancePods(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(app.Namespace), client.MatchingLabels{cfv1alpha1.AppLabel: app.Name},
		client.HasLabels{cfv1alpha1.ProcessLabel}); err != nil {
		return nil, fmt.Errorf("listing the instances of app %q: %w", app.Spec.DisplayName, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		typeA, typeB := a.Labels[cfv1alpha1.ProcessTypeLabel], b.Labels[cfv1alpha1.ProcessTypeLabel]
		return cmp.Or(CompareProcessTypes(typeA, typeB), cmp.Compare(instanceIndex(&a), instanceIndex(&b)), cmp.Compare(a.Name, b.Name))
	})
	return pods.Items, nil
}

// instanceIndex is the index of the instance a pod runs: its StatefulSet ordinal.
func instanceIndex(pod *corev1.Pod) int {
	index := pod.Labels[appsv1.PodIndexLabel]
	if index == "" {
		index = pod.Name[strings.LastIndex(pod.Name, "-")+1:]
	}
	n, err := strconv.Atoi(index)
	if err != nil {
		return -1
	}
	return n
}

// InstanceSource names the instance a pod runs as the cf CLI does: [APP/PROC/WEB/0].
func InstanceSource(pod *corev1.Pod) string {
	return fmt.Sprintf("[APP/PROC/%s/%d]", strings.ToUpper(pod.Labels[cfv1alpha1.ProcessTypeLabel]), instanceIndex(pod))
}

// ParseLogLines reads a log that the kubelet served with timestamps ("<RFC 3339> <text>"). A
// line without a time (none should be) takes the time of the line before.
func ParseLogLines(raw []byte, source string) []LogLine {
	var lines []LogLine
	var last time.Time
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		lines = append(lines, parseLogLine(scanner.Text(), source, last))
		last = lines[len(lines)-1].Time
	}
	return lines
}

func parseLogLine(line, source string, before time.Time) LogLine {
	stamp, text, _ := strings.Cut(line, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return LogLine{Time: before, Source: source, Text: line}
	}
	return LogLine{Time: at, Source: source, Text: text}
}

// RecentLogs reads the last lines of each of the app's instances (of the run before too, for
// an instance that restarted), all of them by time, as the user; and how many instances there
// are.
func RecentLogs(ctx context.Context, c client.Client, clientset kubernetes.Interface, app *cfv1alpha1.CFApp) ([]LogLine, int, error) {
	pods, err := InstancePods(ctx, c, app)
	if err != nil {
		return nil, 0, err
	}
	var lines []LogLine
	for i := range pods {
		of, err := podLogs(ctx, clientset, &pods[i])
		if err != nil {
			return nil, 0, err
		}
		lines = append(lines, of...)
	}
	slices.SortStableFunc(lines, func(a, b LogLine) int { return a.Time.Compare(b.Time) })
	return lines, len(pods), nil
}

// podLogs reads the last lines of an instance: of its run before too, when it restarted.
func podLogs(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod) ([]LogLine, error) {
	var lines []LogLine
	if restarted(pod) {
		// The run that crashed says why; it may be gone already.
		if previous, err := readLog(ctx, clientset, pod, true); err == nil {
			lines = previous
		}
	}
	current, err := readLog(ctx, clientset, pod, false)
	if err != nil {
		return nil, err
	}
	return append(lines, current...), nil
}

// restarted says whether an instance's container has run before.
func restarted(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool {
		return s.Name == instanceContainer && s.RestartCount > 0
	})
}

// readLog reads the last lines of an instance's container (or of its run before). A container
// that has not started has written nothing.
func readLog(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, previous bool) ([]LogLine, error) {
	raw, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: instanceContainer,
		Timestamps: true, TailLines: ptr.To[int64](recentLogLines), Previous: previous}).Do(ctx).Raw()
	var status apierrors.APIStatus
	switch {
	case apierrors.IsBadRequest(err) || apierrors.IsNotFound(err):
		// Waiting to start, or gone meanwhile.
		return nil, nil
	case errors.As(err, &status):
		return nil, fmt.Errorf("reading the output of instance %s: %s", InstanceSource(pod), status.Status().Message)
	case err != nil:
		return nil, fmt.Errorf("reading the output of instance %s: %w", InstanceSource(pod), err)
	}
	return ParseLogLines(raw, InstanceSource(pod)), nil
}

// FollowLogs hands emit what the app's instances write from since on, also those that start
// later (a scale, a restart, a new droplet), as the user, until ctx ends. emit is called from
// one goroutine at a time.
func FollowLogs(ctx context.Context, c client.Client, clientset kubernetes.Interface, app *cfv1alpha1.CFApp, since time.Time, emit func(LogLine)) error {
	var mu sync.Mutex
	serialized := func(l LogLine) {
		mu.Lock()
		defer mu.Unlock()
		emit(l)
	}
	following := map[types.UID]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(logRetry)
	defer tick.Stop()
	for {
		pods, err := InstancePods(ctx, c, app)
		if err != nil && ctx.Err() == nil {
			return err
		}
		for i := range pods {
			if pod := &pods[i]; !following[pod.UID] {
				following[pod.UID] = true
				wg.Go(func() { followPod(ctx, clientset, pod, since, serialized) })
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// followPod hands emit what an instance writes after since, until it is gone or ctx ends. It
// follows each run of its container, the next from where the last ended.
func followPod(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, since time.Time, emit func(LogLine)) {
	source := InstanceSource(pod)
	pods := clientset.CoreV1().Pods(pod.Namespace)
	for ctx.Err() == nil {
		// The kubelet takes whole seconds: lines of the second before are left out here.
		opts := &corev1.PodLogOptions{Container: instanceContainer, Follow: true, Timestamps: true, SinceTime: &metav1.Time{Time: since}}
		if stream, err := pods.GetLogs(pod.Name, opts).Stream(ctx); err == nil {
			scanner := bufio.NewScanner(stream)
			scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
			for scanner.Scan() {
				if l := parseLogLine(scanner.Text(), source, since); l.Time.After(since) {
					since = l.Time
					emit(l)
				}
			}
			stream.Close()
		}
		// The container has not started yet, or it ended; a pod of the same name may be
		// another instance now, which is followed on its own.
		select {
		case <-ctx.Done():
			return
		case <-time.After(logRetry):
		}
		current, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && current.UID != pod.UID) {
			return
		}
	}
}
