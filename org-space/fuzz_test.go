package orgspace

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// FuzzOrgValidator submits arbitrary orgs to the org webhook beside an existing org "Acme",
// labelled with the key of its name as the webhooks and the reconciler label every org: it
// must never panic, accept exactly the orgs that are in the root namespace, have a UUID for a
// name and take a free name, and refuse the others with a field-level reason.
func FuzzOrgValidator(f *testing.F) {
	f.Add("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", "cf", "acme-2")
	f.Add("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", "cf", "ACME")
	f.Add("0b9f2c4e-5d6a-4b7c-8e9f-a0b1c2d3e4f5", "cf", "Acme")
	f.Add("org.with.dots", "cf", "dotted")
	f.Add("Upper", "cf", "upper")
	f.Add("istio-system", "cf", "squatter")
	f.Add("4C46D7E1-0F7B-4A5E-9D2A-5C1F8E3B9A10", "cf", "uppercase")
	f.Add("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10\n", "cf", "newline")
	f.Add("a-name-that-is-far-too-long-to-be-the-name-of-a-namespace-in-kubernetes", "cf", "long")
	f.Add("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", "default", "elsewhere")
	f.Fuzz(func(t *testing.T, name, namespace, displayName string) {
		existing := &cfv1alpha1.CFOrg{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cf", Name: "0b9f2c4e-5d6a-4b7c-8e9f-a0b1c2d3e4f5", CreationTimestamp: metav1.NewTime(time.Unix(0, 0)),
				Labels: map[string]string{cfv1alpha1.DisplayNameKeyLabel: cfv1alpha1.DisplayNameKey("Acme")}},
			Spec: cfv1alpha1.CFOrgSpec{DisplayName: "Acme"},
		}
		reader := fake.NewClientBuilder().WithScheme(cfscheme.New()).WithObjects(existing).Build()
		v := &OrgValidator{names: names{cached: reader, live: reader, deadline: time.Minute}, root: "cf"}
		org := &cfv1alpha1.CFOrg{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       cfv1alpha1.CFOrgSpec{DisplayName: displayName},
		}
		_, err := v.ValidateCreate(context.Background(), org)

		acceptable := namespace == "cf" && cfv1alpha1.ValidateNamespaceGUID(name) == "" &&
			(name == existing.Name || !cfv1alpha1.SameDisplayName(displayName, "Acme"))
		if acceptable != (err == nil) {
			t.Fatalf("org %q in %q named %q: acceptable %v, but the webhook said %v", name, namespace, displayName, acceptable, err)
		}
		var status apierrors.APIStatus
		if err != nil && (!errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0) {
			t.Fatalf("refusal without a field-level cause: %v", err)
		}
	})
}
