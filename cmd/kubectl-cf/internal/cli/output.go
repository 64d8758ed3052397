package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// describe is a condition with its message, for a person.
func describe(c *metav1.Condition) string {
	if c == nil {
		return "cf-hnc has not reported on it yet"
	}
	return fmt.Sprintf("%s: %s", status(c), c.Message)
}

// status is a condition in a table cell: its status, and the reason when it is not True.
func status(c *metav1.Condition) string {
	switch {
	case c == nil:
		return string(metav1.ConditionUnknown)
	case c.Status == metav1.ConditionTrue:
		return string(c.Status)
	}
	return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
}

// byDisplayName orders orgs or spaces by display name, ignoring case as Cloud Foundry does, and
// then by GUID, so that the order is the same on every run.
func byDisplayName[P cfv1alpha1.DisplayNamed](a, b P) int {
	return cmp.Or(
		cmp.Compare(strings.ToLower(a.GetDisplayName()), strings.ToLower(b.GetDisplayName())),
		cmp.Compare(a.GetName(), b.GetName()))
}

// label is an org's or a space's display name, marked while it is being deleted.
func label(o cfv1alpha1.DisplayNamed) string {
	if o.GetDeletionTimestamp().IsZero() {
		return o.GetDisplayName()
	}
	return o.GetDisplayName() + " (deleting)"
}

// writeTable writes rows as aligned columns, as kubectl does. Every row has the same number of
// cells; an empty last cell leaves no blanks at the end of its line.
func writeTable(out io.Writer, rows [][]string) error {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 8, 3, ' ', 0)
	for _, row := range rows {
		// tabwriter aligns only cells that end in a tab: ending the last one in a tab too keeps
		// a column aligned across rows that leave it empty.
		fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(out, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// rejected turns the apiserver's refusal of an object into an error that leads with what was
// wrong: for a webhook's or a validation's refusal, the causes (such as "Organization 'acme'
// already exists."), without the webhook and object names around them.
func rejected(err error) error {
	return rejectedAs(err, nil)
}

// rejectedAs is rejected, with each cause's field named as rename says (for example as the flag
// that set it); rename may be nil.
func rejectedAs(err error, rename func(field string) string) error {
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) || apiStatus.Status().Details == nil {
		return err
	}
	causes := make([]string, 0, len(apiStatus.Status().Details.Causes))
	for _, cause := range apiStatus.Status().Details.Causes {
		text, field := cause.Message, cause.Field
		if rename != nil {
			field = rename(field)
		}
		if field != "" {
			text = field + ": " + text
		}
		causes = append(causes, text)
	}
	if len(causes) == 0 {
		return err
	}
	return &rejection{message: strings.Join(causes, "; "), err: err}
}

// rejection is an apiserver error with a shorter message; errors.As still finds the status.
type rejection struct {
	message string
	err     error
}

func (r *rejection) Error() string { return r.message }
func (r *rejection) Unwrap() error { return r.err }

// listOutput is the -o flag of the listing commands: kubectl's json, yaml, name, jsonpath and
// go-template printers, or else an aligned table.
type listOutput struct {
	flags *genericclioptions.PrintFlags
}

func newListOutput() *listOutput {
	return &listOutput{flags: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.New())}
}

func (o *listOutput) addFlags(cmd *cobra.Command) {
	o.flags.AddFlags(cmd)
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("output", func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
		return completion(o.flags.AllowedFormats(), typed)
	}))
}

// check refuses an unknown -o before the cluster is asked anything.
func (o *listOutput) check() error {
	if o.table() {
		return nil
	}
	_, err := o.flags.ToPrinter()
	return err
}

// table says whether no printer was asked for.
func (o *listOutput) table() bool {
	return *o.flags.OutputFormat == "" && (o.flags.TemplatePrinterFlags.TemplateArgument == nil || *o.flags.TemplatePrinterFlags.TemplateArgument == "")
}

// print writes the list with the printer asked for, or else the rows of table.
func (o *listOutput) print(out io.Writer, list client.ObjectList, table func() [][]string) error {
	return o.printOr(out, list, func(out io.Writer) error { return writeTable(out, table()) })
}

// printOr writes the list with the printer asked for, or else as write does.
func (o *listOutput) printOr(out io.Writer, list client.ObjectList, write func(io.Writer) error) error {
	if o.table() {
		return write(out)
	}
	printer, err := o.flags.ToPrinter()
	if err != nil {
		return err
	}
	// The printers need each item's kind, which typed lists leave empty.
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	s := scheme.New()
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			gvk, err := apiutil.GVKForObject(obj, s)
			if err != nil {
				return err
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	if *o.flags.OutputFormat == "name" {
		// kubectl's name printer takes one object at a time.
		for _, item := range items {
			if err := printer.PrintObj(item, out); err != nil {
				return err
			}
		}
		return nil
	}
	return printer.PrintObj(list, out)
}
