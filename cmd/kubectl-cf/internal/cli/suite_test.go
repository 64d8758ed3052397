package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf/internal/cli"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var (
	k8s client.Client
	// kubeconfig is the administrator's kubeconfig file, which the plugin is run with.
	kubeconfig string
)

func TestCLI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl-cf (apiserver, kube-controller-manager, HNC)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	cp := testenv.Start(ctx, "kubectl-cf")
	k8s, kubeconfig = cp.Client, cp.Kubeconfig
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(testenv.ExpectHealthy)

// kubectlCF runs the plugin in-process against the suite's cluster and returns what it printed
// and its error, which the binary prints as "Error: ..." before it exits 1.
func kubectlCF(ctx context.Context, args ...string) (string, error) {
	return execute(ctx, cli.NewCommand(), "", args...)
}

// kubectlCFWithStdin runs the plugin with stdin.
func kubectlCFWithStdin(ctx context.Context, stdin string, args ...string) (string, error) {
	return execute(ctx, cli.NewCommand(), stdin, args...)
}

func execute(ctx context.Context, cmd *cobra.Command, stdin string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(ctx)
	fmt.Fprintf(GinkgoWriter, "$ kubectl cf %s\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), err
}

// unique returns a display name that no other spec uses.
func unique(prefix string) string {
	return prefix + "-" + string(uuid.NewUUID())[:8]
}

// lines returns the lines of a command's output with the blanks that align columns collapsed.
func lines(out string) []string {
	var collapsed []string
	for line := range strings.Lines(out) {
		collapsed = append(collapsed, strings.Join(strings.Fields(line), " "))
	}
	return collapsed
}

// mutate updates obj on its latest version, again after a conflict; a deleted obj is left alone.
func mutate(ctx context.Context, obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		change()
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}
