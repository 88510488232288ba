package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned/fake"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

const (
	testSession = "s3ssion-secret"
	testCode    = "launch-c0de"
	testCSRF    = "csrf-t0ken"
	testPort    = 8123
	hashA       = "aaaaaaaaaaaa1111111111111111111111111111111111111111111111111111"
	hashB       = "bbbbbbbbbbbb2222222222222222222222222222222222222222222222222222"
)

// harness is a Server on fake clients.
type harness struct {
	srv       *Server
	clock     *clocktesting.FakePassiveClock
	advisor   *fake.Clientset
	kube      *kubefake.Clientset
	approvals []*v1alpha1.Approval // POSTs of .../approve that were not dry runs
	dryRuns   int
	// approveErr answers every approval (nil: 201).
	approveErr error
	// allowed is the SelfSubjectAccessReview's answer.
	allowed bool
	// plans answer GET .../plan in turn; the last one stays.
	plans []*v1alpha1.Plan
}

func exampleConfig() *v1alpha1.VirtPlatformConfig {
	return &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "example-profile", Generation: 2, CreationTimestamp: metav1.Now()},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: "example-profile", Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyAbort},
		Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseReviewRequired, ObservedGeneration: 2, SpecChangedBy: "alice", ImpactSeverity: v1alpha1.ImpactHigh,
			Conditions: []metav1.Condition{{Type: "ReviewRequired", Status: metav1.ConditionTrue, Reason: "ReviewRequired", Message: "Plan ready for review."}}},
	}
}

func planOf(hash, value string) *v1alpha1.Plan {
	return &v1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Name: "example-profile"},
		Status: v1alpha1.PlanStatus{Profile: "example-profile", Generation: 2, PlanHash: hash, ImpactSeverity: v1alpha1.ImpactLow,
			Items: []v1alpha1.PlanItem{{
				Name: "configure-example-component", Operation: v1alpha1.OperationCreate, ImpactSeverity: v1alpha1.ImpactLow,
				TargetRef: v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "example-config", Namespace: "openshift-cnv"},
				Diff:      "--- /dev/null\n+++ example-config (ConfigMap)\n@@ -0,0 +1,2 @@\n+data:\n+  example-key: " + value + "\n",
			}}},
	}
}

func newHarness(t *testing.T, user string, cfg *v1alpha1.VirtPlatformConfig, dynObjects ...runtime.Object) *harness {
	t.Helper()
	h := &harness{clock: clocktesting.NewFakePassiveClock(time.Now()), advisor: fake.NewSimpleClientset(cfg), kube: kubefake.NewClientset(), allowed: true, plans: []*v1alpha1.Plan{planOf(hashA, "example-value")}}
	h.advisor.PrependReactor("get", "virtplatformconfigs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "plan" {
			return false, nil, nil
		}
		p := h.plans[0]
		if len(h.plans) > 1 {
			h.plans = h.plans[1:]
		}
		return true, p, nil
	})
	h.advisor.PrependReactor("create", "virtplatformconfigs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approve" {
			return false, nil, nil
		}
		c := a.(clienttesting.CreateActionImpl)
		in := c.GetObject().(*v1alpha1.Approval)
		if len(c.CreateOptions.DryRun) > 0 {
			h.dryRuns++
		}
		if h.approveErr != nil {
			return true, nil, h.approveErr
		}
		if len(c.CreateOptions.DryRun) == 0 {
			h.approvals = append(h.approvals, in)
		}
		return true, &v1alpha1.Approval{ObjectMeta: in.ObjectMeta, Spec: in.Spec, Status: v1alpha1.ApprovalStatus{ApprovedBy: user, PlanHash: in.Spec.PlanHash}}, nil
	})
	h.kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = h.allowed
		return true, r, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{machineconfig.MachineConfigPools: "MachineConfigPoolList", machineconfig.MachineConfigs: "MachineConfigList"}, dynObjects...)
	srv, err := New(Options{
		Clients: Clients{Advisor: h.advisor, Kube: h.kube, Dynamic: dyn},
		Session: testSession, CSRF: testCSRF, LaunchCode: testCode, Clock: h.clock, Bind: net.IPv4(127, 0, 0, 1), Port: testPort, User: user,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	return h
}

// request builds a request from 127.0.0.1:8123 with the session cookie.
type request struct {
	method, path string
	host         string            // default 127.0.0.1:8123
	cookie       string            // default the session's; "-" for none
	form         url.Values        // POST body
	header       map[string]string // extra headers
}

func (h *harness) do(t *testing.T, r request) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req := httptest.NewRequest(r.method, "http://127.0.0.1:8123"+r.path, body)
	req.Host = "127.0.0.1:8123"
	if r.host != "" {
		req.Host = r.host
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	switch r.cookie {
	case "":
		req.AddCookie(&http.Cookie{Name: "advisor-dashboard-8123", Value: testSession})
	case "-":
	default:
		req.AddCookie(&http.Cookie{Name: "advisor-dashboard-8123", Value: r.cookie})
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, req)
	return w
}

func approveForm(csrf, hash string, confirm bool) url.Values {
	f := url.Values{"planHash": {hash}}
	if csrf != "" {
		f.Set("csrf", csrf)
	}
	if confirm {
		f.Set("confirm", "yes")
	}
	return f
}

// mustContain looks for text in a page, HTML entities decoded.
func mustContain(t *testing.T, body string, want ...string) {
	t.Helper()
	body = html.UnescapeString(body)
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("the page does not contain %q:\n%s", w, body)
		}
	}
}

func mustNotContain(t *testing.T, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Errorf("the page contains %q:\n%s", w, body)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	loopback, any, lan := net.IPv4(127, 0, 0, 1), net.IPv4zero, net.IPv4(192, 168, 1, 5)
	for _, tc := range []struct {
		host string
		bind net.IP
		want bool
	}{
		{"127.0.0.1:8123", loopback, true},
		{"localhost:8123", loopback, true},
		{"LOCALHOST.:8123", loopback, true},
		{"[::1]:8123", loopback, true},
		{"127.0.0.2", loopback, true},
		{"localhost", loopback, true},
		{"evil.example:8123", loopback, false},
		{"127.0.0.1.nip.io:8123", loopback, false},
		{"localhost.evil.example", loopback, false},
		{"192.168.1.5:8123", loopback, false},
		{"", loopback, false},
		// Bound elsewhere on purpose: that address, never a name.
		{"192.168.1.5:8123", lan, true},
		{"192.168.1.6:8123", lan, false},
		{"evil.example:8123", lan, false},
		{"10.0.0.1:8123", any, true},
		{"evil.example:8123", any, false},
	} {
		if got := hostAllowed(tc.host, tc.bind); got != tc.want {
			t.Errorf("hostAllowed(%q, bind %s) = %t, want %t", tc.host, tc.bind, got, tc.want)
		}
	}
}

// TestGuard: every request needs a loopback Host and the session cookie;
// every POST the CSRF token, from a page of this origin. A refused POST
// approves nothing.
func TestGuard(t *testing.T) {
	approve := "/configs/example-profile/approve"
	for _, tc := range []struct {
		name     string
		req      request
		code     int
		contains string
		approved bool
	}{
		{"no cookie", request{method: "GET", path: "/", cookie: "-"}, 401, "needs the session of this run", false},
		{"wrong cookie", request{method: "GET", path: "/", cookie: "guess"}, 401, "needs the session of this run", false},
		{"the launch code as a cookie", request{method: "GET", path: "/", cookie: testCode}, 401, "needs the session of this run", false},
		{"the session secret in the address", request{method: "GET", path: "/?code=" + testSession, cookie: "-"}, 403, "not the launch code of this run", false},
		{"the old token parameter", request{method: "GET", path: "/?token=" + testSession, cookie: "-"}, 401, "needs the session of this run", false},
		{"the session cookie", request{method: "GET", path: "/"}, 200, "example-profile", false},
		{"static assets need the cookie too", request{method: "GET", path: "/static/dashboard.css", cookie: "-"}, 401, "", false},
		{"a static asset", request{method: "GET", path: "/static/dashboard.css"}, 200, "--accent", false},
		{"foreign Host (DNS rebinding)", request{method: "GET", path: "/", host: "evil.example:8123"}, 403, "not a loopback host name", false},
		{"foreign Host with the launch code", request{method: "GET", path: "/?code=" + testCode, host: "evil.example:8123", cookie: "-"}, 403, "DNS rebinding", false},
		{"POST with the launch code", request{method: "POST", path: approve + "?code=" + testCode, cookie: "-", form: approveForm(testCSRF, hashA, true)}, 401, "", false},
		{"POST with a foreign Host", request{method: "POST", path: approve, host: "evil.example:8123", form: approveForm(testCSRF, hashA, true)}, 403, "", false},
		{"POST without the cookie", request{method: "POST", path: approve, cookie: "-", form: approveForm(testCSRF, hashA, true)}, 401, "", false},
		{"POST without the CSRF token", request{method: "POST", path: approve, form: approveForm("", hashA, true)}, 403, "did not come from this dashboard", false},
		{"POST with a wrong CSRF token", request{method: "POST", path: approve, form: approveForm("guess", hashA, true)}, 403, "Nothing was done", false},
		{"POST from another site", request{method: "POST", path: approve, form: approveForm(testCSRF, hashA, true), header: map[string]string{"Origin": "http://evil.example"}}, 403, "", false},
		{"POST from an opaque origin", request{method: "POST", path: approve, form: approveForm(testCSRF, hashA, true), header: map[string]string{"Origin": "null"}}, 403, "", false},
		{"POST from another site, by Sec-Fetch-Site", request{method: "POST", path: approve, form: approveForm(testCSRF, hashA, true), header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "", false},
		{"GET of approve", request{method: "GET", path: approve}, 405, "", false},
		{"PUT", request{method: "PUT", path: approve, form: approveForm(testCSRF, hashA, true)}, 405, "", false},
		{"POST with everything", request{method: "POST", path: approve, form: approveForm(testCSRF, hashA, true), header: map[string]string{"Origin": "http://127.0.0.1:8123", "Sec-Fetch-Site": "same-origin"}}, 303, "", true},
		{"unknown page", request{method: "GET", path: "/nope"}, 404, "Not found", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "bob", exampleConfig())
			w := h.do(t, tc.req)
			if w.Code != tc.code {
				t.Errorf("code %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if tc.contains != "" {
				mustContain(t, w.Body.String(), tc.contains)
			}
			if got := len(h.approvals) > 0; got != tc.approved {
				t.Errorf("approved: %t, want %t", got, tc.approved)
			}
			if w.Code >= 400 {
				mustNotContain(t, w.Body.String(), testCSRF, testSession)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}

// TestLaunchCode: the launch code of the printed address gets one browser
// an HttpOnly, SameSite=Strict session cookie named after the port, once,
// before it expires, and leaves the address; the session secret is in no
// address.
func TestLaunchCode(t *testing.T) {
	type step struct {
		req      request
		after    time.Duration // the clock, since the server started
		code     int
		location string // of a redirect
		cookie   bool   // the session cookie is set
		contains string
	}
	launch := request{method: "GET", path: "/?code=" + testCode, cookie: "-"}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first use: the cookie, and the code leaves the address", []step{
			{req: request{method: "GET", path: "/configs/example-profile?code=" + testCode + "&x=1", cookie: "-"}, code: 303, location: "/configs/example-profile?x=1", cookie: true},
		}},
		{"the cookie works afterwards", []step{
			{req: launch, code: 303, location: "/", cookie: true},
			{req: request{method: "GET", path: "/"}, after: time.Hour, code: 200, contains: "example-profile"},
		}},
		{"used twice: refused", []step{
			{req: launch, code: 303, location: "/", cookie: true},
			{req: launch, code: 403, contains: "Refused: this launch code was already used"},
		}},
		{"used twice: refused, and says to run the command again", []step{
			{req: launch, code: 303, location: "/", cookie: true},
			{req: launch, after: time.Second, code: 403, contains: "Run kubectl advisor dashboard again"},
		}},
		{"just before it expires", []step{
			{req: launch, after: DefaultLaunchTTL - time.Second, code: 303, location: "/", cookie: true},
		}},
		{"expired: refused", []step{
			{req: launch, after: DefaultLaunchTTL, code: 403, contains: "Refused: this launch code has expired"},
			{req: launch, after: DefaultLaunchTTL + time.Hour, code: 403, contains: "within 2m of the dashboard's start"},
		}},
		{"a wrong code spends nothing", []step{
			{req: request{method: "GET", path: "/?code=guess", cookie: "-"}, code: 403, contains: "not the launch code of this run"},
			{req: launch, code: 303, location: "/", cookie: true},
		}},
		{"a HEAD does not spend the code", []step{
			{req: request{method: "HEAD", path: "/?code=" + testCode, cookie: "-"}, code: 401},
			{req: launch, code: 303, location: "/", cookie: true},
		}},
		{"a browser with the cookie is sent on, and the code is spent", []step{
			{req: request{method: "GET", path: "/?code=" + testCode}, code: 303, location: "/"},
			{req: launch, code: 403, contains: "already used"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "bob", exampleConfig())
			start := h.clock.Now()
			for i, st := range tc.steps {
				h.clock.SetTime(start.Add(st.after))
				w := h.do(t, st.req)
				if w.Code != st.code {
					t.Fatalf("step %d: code %d, want %d: %s", i, w.Code, st.code, w.Body)
				}
				if loc := w.Header().Get("Location"); loc != st.location {
					t.Errorf("step %d: Location %q, want %q", i, loc, st.location)
				}
				c := w.Result().Cookies()
				if st.cookie {
					if len(c) != 1 || c[0].Name != "advisor-dashboard-8123" || c[0].Value != testSession || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/" {
						t.Errorf("step %d: cookies %+v", i, c)
					}
				} else if len(c) != 0 {
					t.Errorf("step %d: cookies %+v, want none", i, c)
				}
				if st.contains != "" {
					mustContain(t, w.Body.String(), st.contains)
				}
				mustNotContain(t, w.Body.String(), testSession)
				if w.Code >= 400 {
					mustNotContain(t, w.Body.String(), testCSRF)
				}
			}
		})
	}
}

// TestLaunchPath: the address to print and open carries the launch code,
// not the session secret nor the CSRF token.
func TestLaunchPath(t *testing.T) {
	h := newHarness(t, "bob", exampleConfig())
	if got, want := h.srv.LaunchPath(), "/?code="+testCode; got != want {
		t.Errorf("LaunchPath() = %q, want %q", got, want)
	}
	mustNotContain(t, h.srv.LaunchPath(), testSession, testCSRF)
}

func TestApprove(t *testing.T) {
	approve := "/configs/example-profile/approve"
	forbidden := apierrors.NewForbidden(v1alpha1.Resource("virtplatformconfigs"), "example-profile", errors.New(
		`User "editor" cannot create resource "virtplatformconfigs/approve" in API group "advisor.kubevirt.io" at the cluster scope`))
	conflict := apierrors.NewConflict(v1alpha1.Resource("virtplatformconfigs"), "example-profile", errors.New(
		"you approved plan "+hashA+" but the live plan is now "+hashB+": the targets or the spec changed since you reviewed it. GET the plan again, review it, and approve its planHash"))
	for _, tc := range []struct {
		name     string
		form     url.Values
		err      error
		code     int
		location string
		contains []string
		absent   []string
		approved string
	}{
		{name: "asks first", form: approveForm(testCSRF, hashA, false), code: 200,
			contains: []string{`Approve plan <code class="hash">aaaaaaaaaaaa</code> of example-profile?`, "Yes, approve plan aaaaaaaaaaaa", hashA,
				`name="confirm" value="yes"`, "spec.failurePolicy", "Abort"}},
		{name: "approves exactly the hash of the form", form: approveForm(testCSRF, hashA, true), code: 303,
			location: "/configs/example-profile/rollout?approved=" + hashA, approved: hashA},
		{name: "409: the plan changed, the new diff", form: approveForm(testCSRF, hashA, true), err: conflict, code: 409,
			contains: []string{"The plan changed since you loaded it: nothing was approved.", "you approved plan " + hashA, "example-key: changed-by-hand", "Approve plan bbbbbbbbbbbb"}},
		{name: "403: the missing permission", form: approveForm(testCSRF, hashA, true), err: forbidden, code: 403,
			contains: []string{"The server refused your approval (403 Forbidden): nothing was approved.",
				`user "editor" may not create virtplatformconfigs/approve: ask for the virt-advisor-approver role`}},
		{name: "no hash", form: url.Values{"csrf": {testCSRF}, "confirm": {"yes"}}, code: 400, contains: []string{"the form named no plan hash"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "bob", exampleConfig())
			h.approveErr = tc.err
			h.plans = []*v1alpha1.Plan{planOf(hashB, "changed-by-hand")}
			w := h.do(t, request{method: "POST", path: approve, form: tc.form})
			if w.Code != tc.code {
				t.Errorf("code %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if tc.location != "" && w.Header().Get("Location") != tc.location {
				t.Errorf("Location %q, want %q", w.Header().Get("Location"), tc.location)
			}
			mustContain(t, w.Body.String(), tc.contains...)
			var got string
			if len(h.approvals) == 1 {
				got = h.approvals[0].Spec.PlanHash
			}
			if got != tc.approved || len(h.approvals) > 1 {
				t.Errorf("approvals %v, want %q", h.approvals, tc.approved)
			}
		})
	}
}

// TestApproveButton: the button names the hash shown, and is offered only
// to whom the cluster would let approve.
func TestApproveButton(t *testing.T) {
	fourEyes := apierrors.NewForbidden(v1alpha1.Resource("virtplatformconfigs"), "example-profile", errors.New(
		`user "alice" made the last spec change and this server requires a second person to approve (--require-distinct-approver): another user with the virt-advisor-approver role must approve the plan`))
	ignored := exampleConfig()
	ignored.Spec.Action = v1alpha1.PlanActionIgnore
	for _, tc := range []struct {
		name       string
		user       string
		cfg        *v1alpha1.VirtPlatformConfig
		allowed    bool
		dryRunErr  error
		button     bool
		contains   []string
		wantDryRun bool
	}{
		{name: "an approver", user: "bob", cfg: exampleConfig(), allowed: true, button: true},
		{name: "an editor", user: "editor", cfg: exampleConfig(), allowed: false,
			contains: []string{"You (editor) may not approve plans", "virt-advisor-approver role"}},
		{name: "the author, four eyes", user: "alice", cfg: exampleConfig(), allowed: true, dryRunErr: fourEyes, wantDryRun: true,
			contains: []string{"You made the last change to this config", "second person"}},
		{name: "the author, one pair of eyes", user: "alice", cfg: exampleConfig(), allowed: true, button: true, wantDryRun: true},
		{name: "an ignored config", user: "bob", cfg: ignored, allowed: true, contains: []string{"spec.action is Ignore"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.user, tc.cfg)
			h.allowed, h.approveErr = tc.allowed, tc.dryRunErr
			w := h.do(t, request{method: "GET", path: "/configs/example-profile"})
			if w.Code != 200 {
				t.Fatalf("code %d: %s", w.Code, w.Body)
			}
			body := w.Body.String()
			mustContain(t, body, "aaaaaaaaaaaa", "+  example-key: example-value", "spec.bypassOptimisticLock", "unset (wait forever)", "metadata.generation")
			mustContain(t, body, tc.contains...)
			if got := strings.Contains(body, `id="approve">Approve plan aaaaaaaaaaaa</button>`); got != tc.button {
				t.Errorf("button: %t, want %t", got, tc.button)
			}
			if (h.dryRuns > 0) != tc.wantDryRun {
				t.Errorf("dry-run approvals: %d", h.dryRuns)
			}
			if len(h.approvals) > 0 {
				t.Errorf("a page load approved %v", h.approvals)
			}
		})
	}
}

func TestPlanSaysNoChanges(t *testing.T) {
	h := newHarness(t, "bob", exampleConfig())
	p := planOf(hashA, "")
	p.Status.Items[0].Operation, p.Status.Items[0].Diff = v1alpha1.OperationNone, "(no changes)"
	h.plans = []*v1alpha1.Plan{p}
	w := h.do(t, request{method: "GET", path: "/configs/example-profile"})
	mustContain(t, w.Body.String(), "No changes: the live object already matches.", "Nothing changes: every item already matches the cluster")
}

func TestErrorsReachTheUser(t *testing.T) {
	h := newHarness(t, "viewer", exampleConfig())
	h.advisor.PrependReactor("list", "virtplatformconfigs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("virtplatformconfigs"), "", errors.New(
			`User "viewer" cannot list resource "virtplatformconfigs" in API group "advisor.kubevirt.io" at the cluster scope`))
	})
	w := h.do(t, request{method: "GET", path: "/"})
	if w.Code != 403 {
		t.Errorf("code %d", w.Code)
	}
	mustContain(t, w.Body.String(), "may not list virtplatformconfigs: ask for the virt-advisor-viewer role")

	w = h.do(t, request{method: "GET", path: "/configs/nope"})
	if w.Code != 404 {
		t.Errorf("code %d", w.Code)
	}
	mustContain(t, w.Body.String(), `"nope" not found`)
}

func TestRolloutPage(t *testing.T) {
	cfg := exampleConfig()
	cfg.Name, cfg.UID = "load-aware-rebalancing", "uid-1"
	at := metav1.Now()
	cfg.Status.Phase = v1alpha1.PhaseInProgress
	cfg.Status.Conditions = []metav1.Condition{{Type: "InProgress", Status: metav1.ConditionTrue, Reason: "InProgress", Message: "Applying plan aaaaaaaaaaaa approved by bob"}}
	cfg.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: hashA, ApprovedBy: "bob", ApprovedAt: at, Generation: 2}
	cfg.Status.Items = []v1alpha1.VirtPlatformConfigItem{{
		Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStateInProgress, LastTransitionTime: &at,
		Message:      "MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)",
		TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)},
	}}
	pool := testPool(false, nil, map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1), "unavailableMachineCount": int64(1)})
	pool.Object["spec"].(map[string]any)["machineConfigSelector"] = map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}
	h := newHarness(t, "bob", cfg, pool)
	for i, reason := range []string{"ReviewRequired", "Approved"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: reason, Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "VirtPlatformConfig", Name: cfg.Name, UID: cfg.UID},
			Reason:         reason, Message: reason + " message", Type: "Normal",
			LastTimestamp: metav1.NewTime(at.Add(time.Duration(i) * time.Second)),
		}
		if _, err := h.kube.CoreV1().Events("default").Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := h.do(t, request{method: "GET", path: "/configs/load-aware-rebalancing/rollout?approved=" + hashA})
	if w.Code != 200 {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	mustContain(t, body, "Plan aaaaaaaaaaaa approved by bob at", "Pool worker", "Updating (1 of 3 nodes updated)",
		"node 1 of 3", "1 updated · 1 updating · 1 waiting · 0 degraded", "99-worker-psi-karg",
		"MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)", "ReviewRequired message", "Approved message")
	if strings.Index(body, "ReviewRequired message") > strings.Index(body, "Approved message") {
		t.Error("the timeline is not oldest first")
	}
}

// TestPagesOfAPlanWaitingForAWindow: a plan approved into a closed
// maintenance window is shown waiting, with how far away the opening is;
// its pool is not shown "Updated" before anything is written; the plan
// page says why it takes no approval now, and not that a plan is being
// applied.
func TestPagesOfAPlanWaitingForAWindow(t *testing.T) {
	cfg := exampleConfig()
	cfg.Name, cfg.UID = "load-aware-rebalancing", "uid-1"
	opens := metav1.NewTime(time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC))
	cfg.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: hashA, ApprovedBy: "bob", ApprovedAt: metav1.NewTime(opens.Add(-40 * time.Hour)), Generation: 2}
	cfg.Status.Items = []v1alpha1.VirtPlatformConfigItem{{
		Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStatePending,
		Message:           "Waiting: MachineConfigPool 'worker': window 'weekend' opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d16h; the change is written when it opens",
		TargetRef:         v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		DesiredState:      &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)},
		MaintenanceWindow: &v1alpha1.WindowWait{Name: "weekend", OpensAt: &opens},
	}}
	status.MarkWaiting(&cfg.Status, 2, status.Wait{Reason: status.WaitingMaintenanceWindow,
		Message: "Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'enable-psi-metrics'"})
	pool := testPool(false, nil, map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(3), "configuration": map[string]any{"name": "rendered-worker-new"}})
	pool.Object["spec"].(map[string]any)["machineConfigSelector"] = map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}
	h := newHarness(t, "bob", cfg, pool)
	h.clock.SetTime(time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC))

	w := h.do(t, request{method: "GET", path: "/configs/load-aware-rebalancing/rollout?approved=" + hashA})
	if w.Code != 200 {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	mustContain(t, body, "Waiting for a maintenance window",
		"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d10h) before writing item 'enable-psi-metrics'; plan aaaaaaaaaaaa approved by bob, nothing written yet",
		"Not started: nothing written yet (3 nodes on rendered-worker-new)", "0 updated · 0 updating · 3 waiting · 0 degraded")
	mustNotContain(t, body, "Updated (3 of 3")

	w = h.do(t, request{method: "GET", path: "/configs/load-aware-rebalancing"})
	body = w.Body.String()
	mustContain(t, body, "The server takes no approval now: plan aaaaaaaaaaaa approved by bob is waiting (MaintenanceWindow: ", "nothing of it is written yet",
		"To apply another plan instead, change the spec")
	mustNotContain(t, body, "a plan is being applied")

	w = h.do(t, request{method: "GET", path: "/"})
	mustContain(t, w.Body.String(), "Waiting for a maintenance window", "in 1d10h")
}

// TestRefusedPageIsStyled: a refused page cannot load /static without the
// session cookie, so it inlines the stylesheet, and the CSP allows exactly that one.
func TestRefusedPageIsStyled(t *testing.T) {
	h := newHarness(t, "bob", exampleConfig())
	w := h.do(t, request{method: "GET", path: "/", cookie: "-"})
	body := w.Body.String()
	start, end := strings.Index(body, "<style>"), strings.Index(body, "</style>")
	if start < 0 || end < start {
		t.Fatalf("no inline stylesheet:\n%s", body)
	}
	sum := sha256.Sum256([]byte(body[start+len("<style>") : end]))
	want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self' "+want+";") {
		t.Errorf("the CSP %q does not allow the inline stylesheet (%s)", csp, want)
	}
	mustNotContain(t, body, "/static/")
}
