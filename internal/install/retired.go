package install

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// retired are objects that earlier releases installed and this one does not, which an upgrade
// must take back because they grant access: a server-side apply never deletes what the new
// configuration leaves out.
var retired = []struct {
	kind schema.GroupVersionKind
	name string
}{
	// Let every authenticated user get any CFOrg; kubectl cf now reads the org's name on the
	// org's namespace, and the CF API filters orgs by membership.
	{rbacKind("ClusterRoleBinding"), "cf-hnc:space-finder"},
	{rbacKind("ClusterRole"), "cf-hnc:space-finder"},
}

func rbacKind(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind}
}

// deleteRetired deletes the retired objects that are still there.
func deleteRetired(ctx context.Context, c client.Client) error {
	for _, r := range retired {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(r.kind)
		obj.SetName(r.name)
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s, which earlier releases installed: %w", r.kind.Kind, r.name, err)
		}
	}
	return nil
}
