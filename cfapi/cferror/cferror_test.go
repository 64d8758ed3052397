package cferror_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

func TestCFError(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CF errors")
}

var orgs = schema.GroupResource{Group: "workloads.cloudfoundry.org", Resource: "cforgs"}

func mapped(err error) *cferror.Error {
	GinkgoHelper()
	var cf *cferror.Error
	Expect(errors.As(cferror.FromKubernetes(err, "Organization"), &cf)).To(BeTrue(), "%v", err)
	return cf
}

var _ = Describe("FromKubernetes", func() {
	It("maps the apiserver's refusals to what the cf CLI handles alike", func() {
		Expect(mapped(apierrors.NewUnauthorized("no"))).To(HaveField("Title", "CF-InvalidAuthToken"))
		forbidden := mapped(apierrors.NewForbidden(orgs, "x", fmt.Errorf("RBAC says no")))
		Expect(forbidden.Status).To(Equal(http.StatusForbidden))
		Expect(forbidden.Detail).To(ContainSubstring("RBAC says no"))
		Expect(*mapped(apierrors.NewNotFound(orgs, "x"))).To(Equal(cferror.Error{Status: 404, Code: 10010, Title: "CF-ResourceNotFound", Detail: "Organization not found"}))
		Expect(mapped(apierrors.NewTooManyRequests("slow down", 1))).To(HaveField("Status", http.StatusServiceUnavailable))
	})

	It("keeps of an Invalid error the reasons, which hold the sentences the cf CLI matches", func() {
		kind := schema.GroupKind{Group: "workloads.cloudfoundry.org", Kind: "CFOrg"}
		err := apierrors.NewInvalid(kind, "guid", field.ErrorList{
			field.Invalid(field.NewPath("spec", "displayName"), `it's "quoted"`, "Organization 'it's \"quoted\"' already exists."),
		})
		Expect(mapped(err).Detail).To(Equal("Organization 'it's \"quoted\"' already exists."))
		Expect(mapped(err).Status).To(Equal(http.StatusUnprocessableEntity))

		err = apierrors.NewInvalid(kind, "guid", field.ErrorList{field.Required(field.NewPath("spec", "displayName"), "")})
		Expect(mapped(err).Detail).To(Equal("spec.displayName Required value"))
	})

	It("passes on errors that are not the apiserver's, and CF's own", func() {
		plain := errors.New("boom")
		Expect(cferror.FromKubernetes(plain, "Organization")).To(BeIdenticalTo(plain))
		cf := cferror.UnprocessableEntity("no")
		Expect(cferror.FromKubernetes(cf, "Organization")).To(BeIdenticalTo(cf))
	})
})

var _ = Describe("Write", func() {
	It("writes CF's error body with the error's status", func() {
		rec := httptest.NewRecorder()
		cferror.Write(rec, cferror.UnknownRequest())
		Expect(rec.Code).To(Equal(http.StatusNotFound))
		Expect(rec.Body.String()).To(MatchJSON(`{"errors":[{"code":10000,"title":"CF-NotFound","detail":"Unknown request"}]}`))
	})
})
