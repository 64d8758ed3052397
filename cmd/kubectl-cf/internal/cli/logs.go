package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
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

const (
	// instanceContainer is the one container of an instance's pod.
	instanceContainer = "app"
	// recentLogLines bounds what --recent shows of each instance (and of its crashed run).
	recentLogLines = 200
	// logTimeFormat is the time of a line as the cf CLI shows it.
	logTimeFormat = "2006-01-02T15:04:05.00-0700"
	// logRetry is how often logs looks for new instances, and for the output of one that has
	// not started yet or has restarted.
	logRetry = time.Second
)

func newLogsCommand(s *session) *cobra.Command {
	var recent bool
	cmd := appCommand(s, &cobra.Command{
		Use:   "logs APP -o ORG -s SPACE [--recent]",
		Short: "Follow what an app's instances write, or print what they wrote lately (--recent)",
		Long: `Show what the instances of an app write to stdout and stderr, as cf logs does: each line with its
time and its instance, as [APP/PROC/WEB/0] (the process type and the instance's index).

Without --recent, logs follows the app's instances, also those that start later (a scale, a
restart, a new droplet), until interrupted (Ctrl-C). With --recent, it prints the last lines of
each instance, and of the run before for an instance that crashed, oldest first, and ends.
Instances that have not started (no node placed them, or their droplet is being pulled) have
written nothing.`,
		Example: `  kubectl cf logs web -o acme -s dev --recent
  kubectl cf logs web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		clientset, err := a.s.clientset()
		if err != nil {
			return err
		}
		if recent {
			return recentLogs(ctx, a, clientset)
		}
		return followLogs(ctx, a, clientset)
	})
	cmd.Flags().BoolVar(&recent, "recent", false, "Print the last lines of each instance and end, rather than follow them.")
	return cmd
}

// instancePods lists the pods of an app's instances, ordered as the instances are shown: by
// process type (web first), then index. The app's build pods carry the app's label too, but no
// process.
func instancePods(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(app.Namespace), client.MatchingLabels{cfv1alpha1.AppLabel: app.Name},
		client.HasLabels{cfv1alpha1.ProcessLabel}); err != nil {
		return nil, fmt.Errorf("listing the instances of app %q: %w", app.Spec.DisplayName, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		typeA, typeB := a.Labels[cfv1alpha1.ProcessTypeLabel], b.Labels[cfv1alpha1.ProcessTypeLabel]
		return cmp.Or(compareProcessTypes(typeA, typeB), cmp.Compare(instanceIndex(&a), instanceIndex(&b)), cmp.Compare(a.Name, b.Name))
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

// instanceSource names the instance a pod runs as the cf CLI does: [APP/PROC/WEB/0].
func instanceSource(pod *corev1.Pod) string {
	return fmt.Sprintf("[APP/PROC/%s/%d]", strings.ToUpper(pod.Labels[cfv1alpha1.ProcessTypeLabel]), instanceIndex(pod))
}

// logLine is a line that an instance wrote.
type logLine struct {
	at     time.Time
	source string
	text   string
}

// format shows a line as the cf CLI does, its time in loc.
func (l logLine) format(loc *time.Location) string {
	return fmt.Sprintf("%s %s %s", l.at.In(loc).Format(logTimeFormat), l.source, l.text)
}

// parseLogLines reads a log that the kubelet served with timestamps ("<RFC 3339> <text>"). A
// line without a time (none should be) takes the time of the line before.
func parseLogLines(raw []byte, source string) []logLine {
	var lines []logLine
	var last time.Time
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		lines = append(lines, parseLogLine(scanner.Text(), source, last))
		last = lines[len(lines)-1].at
	}
	return lines
}

func parseLogLine(line, source string, before time.Time) logLine {
	stamp, text, _ := strings.Cut(line, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return logLine{at: before, source: source, text: line}
	}
	return logLine{at: at, source: source, text: text}
}

// recentLogs prints the last lines of each of the app's instances, of all of them by time, or
// says that they wrote nothing.
func recentLogs(ctx context.Context, a *appContext, clientset kubernetes.Interface) error {
	pods, err := instancePods(ctx, a.c, a.app)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		why := "none has been started"
		if a.app.Spec.DesiredState == cfv1alpha1.StoppedState {
			why = "it is STOPPED"
		}
		fmt.Fprintf(a.out, "App %q has no instances: %s.\n", a.app.Spec.DisplayName, why)
		return nil
	}
	var lines []logLine
	for i := range pods {
		of, err := podLogs(ctx, clientset, &pods[i])
		if err != nil {
			return err
		}
		lines = append(lines, of...)
	}
	if len(lines) == 0 {
		fmt.Fprintln(a.out, nothingWritten(len(pods), a.app.Spec.DisplayName))
		return nil
	}
	slices.SortStableFunc(lines, func(a, b logLine) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintln(a.out, l.format(time.Local))
	}
	return nil
}

// nothingWritten says that an app's instances wrote nothing.
func nothingWritten(instances int, app string) string {
	if instances == 1 {
		return fmt.Sprintf("The 1 instance of app %q has written nothing yet.", app)
	}
	return fmt.Sprintf("The %d instances of app %q have written nothing yet.", instances, app)
}

// podLogs reads the last lines of an instance: of its run before too, when it restarted.
func podLogs(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod) ([]logLine, error) {
	var lines []logLine
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
func readLog(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, previous bool) ([]logLine, error) {
	raw, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: instanceContainer,
		Timestamps: true, TailLines: ptr.To[int64](recentLogLines), Previous: previous}).Do(ctx).Raw()
	var status apierrors.APIStatus
	switch {
	case apierrors.IsBadRequest(err) || apierrors.IsNotFound(err):
		// Waiting to start, or gone meanwhile.
		return nil, nil
	case errors.As(err, &status):
		return nil, fmt.Errorf("reading the output of instance %s: %s", instanceSource(pod), status.Status().Message)
	case err != nil:
		return nil, fmt.Errorf("reading the output of instance %s: %w", instanceSource(pod), err)
	}
	return parseLogLines(raw, instanceSource(pod)), nil
}

// followLogs prints what the app's instances write from now on, also those that start later,
// until ctx ends.
func followLogs(ctx context.Context, a *appContext, clientset kubernetes.Interface) error {
	fmt.Fprintf(a.out, "Following what the instances of app %q write (Ctrl-C ends it):\n", a.app.Spec.DisplayName)
	out := &lineWriter{out: a.out}
	since := time.Now()
	following := map[types.UID]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(logRetry)
	defer tick.Stop()
	for {
		pods, err := instancePods(ctx, a.c, a.app)
		if err != nil && ctx.Err() == nil {
			return err
		}
		for i := range pods {
			if pod := &pods[i]; !following[pod.UID] {
				following[pod.UID] = true
				wg.Go(func() { followPod(ctx, clientset, pod, since, out) })
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// lineWriter writes whole lines from several instances.
type lineWriter struct {
	mu  sync.Mutex
	out io.Writer
}

func (w *lineWriter) writeLine(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintln(w.out, line)
}

// followPod prints what an instance writes after since, until it is gone or ctx ends. It
// follows each run of its container, the next from where the last ended.
func followPod(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, since time.Time, out *lineWriter) {
	source := instanceSource(pod)
	pods := clientset.CoreV1().Pods(pod.Namespace)
	for ctx.Err() == nil {
		// The kubelet takes whole seconds: lines of the second before are left out here.
		opts := &corev1.PodLogOptions{Container: instanceContainer, Follow: true, Timestamps: true, SinceTime: &metav1.Time{Time: since}}
		if stream, err := pods.GetLogs(pod.Name, opts).Stream(ctx); err == nil {
			scanner := bufio.NewScanner(stream)
			scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
			for scanner.Scan() {
				if l := parseLogLine(scanner.Text(), source, since); l.at.After(since) {
					since = l.at
					out.writeLine(l.format(time.Local))
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
