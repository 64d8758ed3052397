package manager_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"code.cloudfoundry.org/cf-hnc/manager"
)

// testCA signs certificates for the webhook specs.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(name string) testCA {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return testCA{cert: cert, key: key}
}

func (ca testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// issue makes a key pair for a server of 127.0.0.1 or, with client, for a client named name.
func (ca testCA) issue(name string, client bool) tls.Certificate {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// writeKeyPair writes pair as dir/tls.crt and dir/tls.key, as the webhook server reads them.
func writeKeyPair(dir string, pair tls.Certificate) {
	GinkgoHelper()
	keyDER, err := x509.MarshalECPrivateKey(pair.PrivateKey.(*ecdsa.PrivateKey))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[0]}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
}

func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var _ = Describe("The webhook server with --webhook-client-ca-file", func() {
	var (
		servingCA, apiserverCA testCA
		url                    string
	)

	BeforeEach(func(ctx SpecContext) {
		servingCA, apiserverCA = newTestCA("serving"), newTestCA("apiserver clients")
		dir := GinkgoT().TempDir()
		writeKeyPair(dir, servingCA.issue("127.0.0.1", false))
		caFile := filepath.Join(dir, "client-ca.crt")
		Expect(os.WriteFile(caFile, apiserverCA.pem(), 0o600)).To(Succeed())

		requireClientCertificates, err := manager.ClientCertificates(caFile)
		Expect(err).NotTo(HaveOccurred())
		port := freePort()
		server := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir, TLSOpts: []func(*tls.Config){requireClientCertificates}})
		server.Register("/validate", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		})})
		serverCtx, stop := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- server.Start(serverCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(BeNil()))
		})
		// The manager's readiness check dials the server without a certificate: it must pass.
		Eventually(func() error { return server.StartedChecker()(nil) }).Should(Succeed())
		url = "https://127.0.0.1:" + strconv.Itoa(port) + "/validate"
	})

	// review posts an AdmissionReview as the apiserver does, presenting certificate if there is
	// one, whoever signed it.
	review := func(ctx context.Context, certificate *tls.Certificate) (*admissionv1.AdmissionReview, error) {
		roots := x509.NewCertPool()
		roots.AddCert(servingCA.cert)
		present := &tls.Config{RootCAs: roots, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if certificate == nil {
				return &tls.Certificate{}, nil
			}
			return certificate, nil
		}}
		caller := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: present}}
		body, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: uuid.NewUUID(), Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"kind":"ConfigMap"}`)}}})
		Expect(err).NotTo(HaveOccurred())
		request, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		request.Header.Set("Content-Type", "application/json")
		response, err := caller.Do(request)
		if err != nil {
			return nil, err
		}
		defer response.Body.Close()
		answer := &admissionv1.AdmissionReview{}
		return answer, json.NewDecoder(response.Body).Decode(answer)
	}

	// Review 3, N10: any pod that reached the port drove the validators' reads with forged
	// AdmissionReviews.
	It("refuses a call without a client certificate, or with one that another CA signed", func(ctx SpecContext) {
		_, err := review(ctx, nil)
		Expect(err).To(MatchError(ContainSubstring("certificate required")))
		forged := newTestCA("elsewhere").issue("forger", true)
		_, err = review(ctx, &forged)
		Expect(err).To(MatchError(ContainSubstring("unknown certificate authority")))

		apiserver := apiserverCA.issue("kube-apiserver", true)
		answer, err := review(ctx, &apiserver)
		Expect(err).NotTo(HaveOccurred())
		Expect(answer.Response.Allowed).To(BeTrue())
	})

	It("refuses the apiserver's own calls too until it presents a certificate (the AdmissionConfiguration)", func(ctx SpecContext) {
		label := "webhook-client-ca-" + string(uuid.NewUUID())[:8]
		config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: label},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "client-ca.workloads.cloudfoundry.org",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: servingCA.pem()},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}}}
		Expect(k8s.Create(ctx, config)).To(Succeed())
		DeferCleanup(k8s.Delete, config)
		configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: label, Labels: map[string]string{label: "true"}}}
		Eventually(func() error { return k8s.Create(ctx, configMap, client.DryRunAll) }).
			Should(MatchError(ContainSubstring("certificate required")))
	})
})
