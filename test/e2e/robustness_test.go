package e2e

import (
	"bytes"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// post sends a raw body to the collection and returns the status code.
func post(body []byte, contentType string, params map[string]string) (int, []byte, []string) {
	req := adminRaw.Post().Resource("virtplatformconfigs").Body(body).SetHeader("Content-Type", contentType)
	for k, v := range params {
		req = req.Param(k, v)
	}
	var warnings []string
	res := req.Do(suiteCtx)
	var code int
	res.StatusCode(&code)
	for _, w := range res.Warnings() {
		warnings = append(warnings, w.Text)
	}
	raw, _ := res.Raw()
	return code, raw, warnings
}

func expectHealthy() {
	GinkgoHelper()
	raw, err := adminRaw.Get().AbsPath("/apis/advisor.kubevirt.io/v1alpha1").DoRaw(suiteCtx)
	Expect(err).NotTo(HaveOccurred(), string(raw))
	Expect(testEnv.Advisor().Exited()).To(BeFalse())
}

var _ = Describe("bad input", func() {
	BeforeEach(func() { deleteConfig("example-profile") })

	It("rejects malformed JSON with 400", func() {
		code, body, _ := post([]byte(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig",`), "application/json", nil)
		Expect(code).To(Equal(http.StatusBadRequest), string(body))
		expectHealthy()
	})

	It("rejects a wrong apiVersion or kind with 400", func() {
		code, body, _ := post([]byte(`{"apiVersion":"advisor.kubevirt.io/v9","kind":"VirtPlatformConfig","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile"}}`), "application/json", nil)
		Expect(code).To(Equal(http.StatusBadRequest), string(body))
		code, body, _ = post([]byte(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"Pod","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile"}}`), "application/json", nil)
		Expect(code).To(Equal(http.StatusBadRequest), string(body))
		expectHealthy()
	})

	It("rejects unknown fields under Strict and warns under Warn, as kubectl asks", func() {
		body := []byte(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile","actoin":"Apply"}}`)
		code, raw, _ := post(body, "application/json", map[string]string{"fieldValidation": "Strict"})
		Expect(code).To(Equal(http.StatusBadRequest), string(raw))
		Expect(string(raw)).To(ContainSubstring(`unknown field \"spec.actoin\"`))

		code, raw, warnings := post(body, "application/json", map[string]string{"fieldValidation": "Warn"})
		Expect(code).To(Equal(http.StatusCreated), string(raw))
		DeferCleanup(deleteConfig, "example-profile")
		Expect(warnings).To(ContainElement(ContainSubstring(`unknown field "spec.actoin"`)))

		// kubectl uses Strict by default.
		out, err := kubectlApply(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile","wiatTimeout":"5m"}}`)
		Expect(err).To(HaveOccurred())
		Expect(out).To(MatchRegexp(`unknown field "(spec\.)?wiatTimeout"`))
		expectHealthy()
	})

	It("rejects a 3 MiB body with a 4xx and stays healthy", func() {
		big := bytes.Repeat([]byte("a"), 3<<20)
		body := append([]byte(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":"example-profile","annotations":{"x":"`), big...)
		body = append(body, []byte(`"}},"spec":{"profile":"example-profile"}}`)...)
		code, raw, _ := post(body, "application/json", nil)
		Expect(code).To(BeNumerically(">=", 400))
		Expect(code).To(BeNumerically("<", 500), string(raw[:min(len(raw), 300)]))
		expectHealthy()
	})

	It("answers 404 for an unknown name on every subresource", func() {
		configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
		_, err := configs.Get(suiteCtx, "nope", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(404)))
		_, err = configs.GetPlan(suiteCtx, "nope", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(404)))
		_, err = configs.Approve(suiteCtx, "nope", &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: "x"}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(404)))
		// Status takes no writes from anyone, known name or not.
		_, err = configs.UpdateStatus(suiteCtx, &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.UpdateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)))
	})
})

var _ = Describe("storage", Ordered, func() {
	It("keeps data across a restart of virt-advisor-apiserver on the same embedded etcd dir", func() {
		c := createConfig(newConfig("example-profile"))
		Expect(testEnv.RestartAdvisor(suiteCtx)).To(Succeed())
		var got *v1alpha1.VirtPlatformConfig
		Eventually(func() error {
			var err error
			got, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, "example-profile", metav1.GetOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(got.UID).To(Equal(c.UID))
		Expect(got.Spec).To(Equal(c.Spec))
	})
})
