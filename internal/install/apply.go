package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of everything that install applies, from
// every entry point, so that an upgrade from any of them takes over the fields of the last.
const FieldOwner = client.FieldOwner("cf-hnc-install")

// Apply server-side applies objs, taking over fields that another manager set (a CRD that
// envtest created, an earlier `kubectl apply`). Namespaces come first (a namespace still being
// deleted is waited for), then CRDs, which it waits to be established so that objects of their
// kinds can follow, then everything else in the built order, and webhook configurations last:
// they fail closed, and go in only once what they protect is in place. Last it deletes what
// earlier releases installed that grants access this one no longer gives (retired), and puts
// the restricted Pod Security Standard's labels on the tree's namespaces that lack them.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int { return applyRank(a) - applyRank(b) })
	established := false
	for _, obj := range ordered {
		if applyRank(obj) > crdRank && !established {
			if err := waitEstablished(ctx, c, ordered); err != nil {
				return err
			}
			established = true
		}
		if obj.GetKind() == "Namespace" {
			if err := waitNotTerminating(ctx, c, obj.GetName()); err != nil {
				return err
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), FieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", describe(obj), err)
		}
	}
	if err := deleteRetired(ctx, c); err != nil {
		return err
	}
	return enforcePodSecurity(ctx, c)
}

const crdRank = 1

func applyRank(obj *unstructured.Unstructured) int {
	switch obj.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return crdRank
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return 3
	}
	return 2
}

// waitEstablished waits until every CRD among objs is established.
func waitEstablished(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(obj.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), crd); err != nil {
				return false, err
			}
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cond := range conditions {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be established: %w", describe(obj), err)
		}
	}
	return nil
}

// waitNotTerminating waits until a namespace that is being deleted is gone.
func waitNotTerminating(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
		err := c.Get(ctx, client.ObjectKey{Name: name}, ns)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && ns.DeletionTimestamp == nil, err
	})
	if err != nil {
		return fmt.Errorf("namespace %s is still being deleted: %w", name, err)
	}
	return nil
}

// UninstallOptions say what Uninstall removes besides the manager.
type UninstallOptions struct {
	// Purge removes cf-hnc's data as well: first every CFOrg, whose finalizer (run by the
	// manager, which must be running) has HNC delete the org's namespace with its spaces and
	// everything in them, then the CRDs and the root namespace.
	Purge bool
	// Timeout bounds each wait for deletions; zero means five minutes.
	Timeout time.Duration
}

// Uninstall deletes what Build made, in the reverse order of Apply: the webhook configurations
// first, so that nothing fails closed on a manager that is going away. Without Purge it keeps
// the data: the CRDs with every CF object and the root namespace, so that orgs and spaces stay
// as HNC namespaces and a later Apply takes them up again. HNC's configuration always stays:
// HNC refuses to delete its singleton, and other users of HNC may propagate with it.
func Uninstall(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, opts UninstallOptions) error {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Purge {
		if err := deleteOrgs(ctx, c, opts.Timeout); err != nil {
			return err
		}
	}
	ordered := slices.Clone(objs)
	slices.Reverse(ordered)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int { return applyRank(b) - applyRank(a) })
	var removed []*unstructured.Unstructured
	for _, data := range []bool{false, true} {
		if data && !opts.Purge {
			break
		}
		for _, obj := range ordered {
			if isData(obj) != data || obj.GetKind() == "HNCConfiguration" {
				continue
			}
			err := c.Delete(ctx, obj.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return fmt.Errorf("deleting %s: %w", describe(obj), err)
			}
			removed = append(removed, obj)
		}
	}
	return waitGone(ctx, c, removed, opts.Timeout)
}

// isData says whether obj holds or frames cf-hnc's data rather than running the manager.
func isData(obj *unstructured.Unstructured) bool {
	switch obj.GetKind() {
	case "CustomResourceDefinition":
		return true
	case "Namespace":
		return obj.GetName() != Namespace
	}
	return false
}

var cfOrgs = schema.GroupVersionKind{Group: "workloads.cloudfoundry.org", Version: "v1alpha1", Kind: "CFOrgList"}

// deleteOrgs deletes every CFOrg and waits until they are gone.
func deleteOrgs(ctx context.Context, c client.Client, timeout time.Duration) error {
	list := func(ctx context.Context) ([]unstructured.Unstructured, error) {
		orgs := &unstructured.UnstructuredList{}
		orgs.SetGroupVersionKind(cfOrgs)
		if err := c.List(ctx, orgs); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return orgs.Items, nil
	}
	orgs, err := list(ctx)
	if err != nil {
		return err
	}
	for i := range orgs {
		if err := c.Delete(ctx, &orgs[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CFOrg %s/%s: %w", orgs[i].GetNamespace(), orgs[i].GetName(), err)
		}
	}
	var left []unstructured.Unstructured
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		left, err = list(ctx)
		return len(left) == 0, err
	})
	if err != nil {
		names := make([]string, 0, len(left))
		for _, org := range left {
			names = append(names, org.GetName())
		}
		return fmt.Errorf("CFOrgs still there after %s: %s (their finalizer waits for cf-hnc's manager to delete "+
			"the org's namespace through HNC: both must be running): %w", timeout, strings.Join(names, ", "), err)
	}
	return nil
}

// waitGone waits until every object is deleted; namespaces and CRDs take a while. An object
// that is back without a deletion timestamp is deleted again: kube-controller-manager's
// clusterrole-aggregation controller, acting on a stale cache while the roles it aggregates
// go, re-creates an aggregated ClusterRole with server-side apply.
func waitGone(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var now []string
		for _, obj := range objs {
			current := &metav1.PartialObjectMetadata{}
			current.SetGroupVersionKind(obj.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), current)
			switch {
			case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
				continue
			case err != nil:
				return false, err
			case current.DeletionTimestamp == nil:
				if err := c.Delete(ctx, current, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("deleting %s again: %w", describe(obj), err)
				}
			}
			now = append(now, describe(obj))
		}
		pending = now
		return len(now) == 0, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("still being deleted: %s", strings.Join(pending, ", ")), err)
	}
	return nil
}

func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	return obj.GetKind() + " " + obj.GetName()
}
