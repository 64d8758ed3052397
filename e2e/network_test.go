package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The gateway and the tenants' network on the local node: Traefik routes a host to the ready
// instances of an app, and the NetworkPolicy that cf-hnc places in the root keeps every space's
// pods apart from other spaces' and from the platform's, enforced on the node by
// kube-network-policies. Each refusal has its control: the same connection succeeding where the
// policy allows it, so that none passes for want of a route.
var _ = Describe("The gateway and the tenants' network", Label(localLabel), Ordered, func() {
	var (
		spaceA, spaceB       string
		instanceA, instanceB *corev1.Pod
		hostA, hostB         string
	)

	BeforeAll(func(ctx SpecContext) {
		orgA, a := buildingSpace(ctx, "net-a")
		orgB, b := buildingSpace(ctx, "net-b")
		spaceA, spaceB = a, b
		appA := startedAppOf(ctx, orgA, spaceA, staticSource, 1)
		appB := startedAppOf(ctx, orgB, spaceB, staticSource, 1)
		instanceA, instanceB = instancePod(ctx, webProcess(ctx, appA), 0), instancePod(ctx, webProcess(ctx, appB), 0)
		hostA, hostB = "a-"+string(uuid.NewUUID())[:8]+".apps.local", "b-"+string(uuid.NewUUID())[:8]+".apps.local"
		routeTo(ctx, webProcess(ctx, appA), hostA)
		routeTo(ctx, webProcess(ctx, appB), hostB)
	})

	It("routes each app's host through the gateway on loopback to the app's instances", func(ctx SpecContext) {
		for _, host := range []string{hostA, hostB} {
			Eventually(func() (string, error) { return throughGateway(ctx, host) }, time.Minute).Should(ContainSubstring("<h1>static</h1>"), host)
		}
		body, err := throughGateway(ctx, "nobody-"+string(uuid.NewUUID())[:8]+".apps.local")
		Expect(err).To(MatchError(ContainSubstring("404")), "a host no route claims: %s", body)
	})

	It("keeps a space's pods from another org's instances and the platform's ports, and lets them reach their own space", func(ctx SpecContext) {
		managers := runningManagerPods(ctx)
		Expect(managers).NotTo(BeEmpty())
		manager := managers[0].Status.PodIP
		script := probeScript(
			instanceA.Status.PodIP+" 8080",                    // control: the space's own instance
			instanceB.Status.PodIP+" 8080",                    // another org's instance
			manager+" 9443", manager+" 8443", manager+" 8081") // the manager's webhook, metrics and probe ports
		inSpace := runInPod(ctx, spaceA, script)
		Expect(inSpace).To(ContainSubstring(instanceA.Status.PodIP+":8080 open"), "its own space, as the policy allows")
		Expect(inSpace).To(ContainSubstring(instanceB.Status.PodIP + ":8080 closed"))
		for _, port := range []string{"9443", "8443", "8081"} {
			Expect(inSpace).To(ContainSubstring(manager+":"+port+" closed"), "the manager's port %s", port)
		}

		By("the controls: the same connections succeed where the policy allows them, so the refusals are the policy's, not the network's")
		Expect(runInPod(ctx, spaceB, probeScript(instanceB.Status.PodIP+" 8080"))).To(ContainSubstring(instanceB.Status.PodIP+":8080 open"),
			"the other org's instance, from its own space")
		outside := runInPod(ctx, createNamespace(ctx), script)
		for _, port := range []string{"9443", "8443", "8081"} {
			Expect(outside).To(ContainSubstring(manager+":"+port+" open"), "the manager's port %s, from outside the CF tree", port)
		}
		Expect(outside).To(ContainSubstring(instanceB.Status.PodIP+":8080 closed"), "an instance admits its space and the gateway only")

		By("the NetworkPolicy is HNC's copy of the root's in every space")
		for _, space := range []string{spaceA, spaceB} {
			policy := &networkingv1.NetworkPolicy{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "cf-default-network"}, policy)).To(Succeed())
			Expect(policy.GetLabels()).To(HaveKeyWithValue("hnc.x-k8s.io/inherited-from", root))
		}
	})
})

// routeTo makes what cf-hnc makes of a route for a process: a Service of its instances and an
// HTTPRoute of host to it, attached to the embedded gateway.
func routeTo(ctx SpecContext, process *cfv1alpha1.CFProcess, host string) {
	GinkgoHelper()
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: process.Namespace, Name: "route-" + string(uuid.NewUUID())[:8]},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{cfv1alpha1.ProcessLabel: process.Name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	Expect(k8s.Create(ctx, service)).To(Succeed())
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: process.Namespace, Name: service.Name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{
				{Namespace: ptr.To(gatewayv1.Namespace("cf-gateway")), Name: "default"}}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(service.Name), Port: ptr.To(gatewayv1.PortNumber(8080))}}}}}},
		},
	}
	Expect(k8s.Create(ctx, route)).To(Succeed())
}

// throughGateway sends GET / for host to the gateway's listener on loopback.
func throughGateway(ctx context.Context, host string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.GatewayURL()+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s", host, resp.Status)
	}
	return string(body), err
}

// probeScript tries a TCP connection to each "address port" and prints "address:port open" or
// "address:port closed".
func probeScript(targets ...string) string {
	var b strings.Builder
	b.WriteString(`probe() { if echo | nc -w 3 "$1" "$2" >/dev/null 2>&1; then echo "$1:$2 open"; else echo "$1:$2 closed"; fi; }` + "\n")
	for _, t := range targets {
		b.WriteString("probe " + t + "\n")
	}
	return b.String()
}
