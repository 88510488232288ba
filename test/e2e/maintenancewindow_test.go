package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // the specs read Europe/Berlin whatever the machine has

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// e2ePool is a pool name no MachineConfigPool of the environment has: the
// windows of these specs restrict nothing another spec rolls out.
const e2ePool = "e2e-windows"

// deleteWindow removes a window and waits until it is gone.
func deleteWindow(name string) {
	err := advisor.AdvisorV1alpha1().MaintenanceWindows().Delete(suiteCtx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() bool {
		_, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Get(suiteCtx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(BeTrue())
}

// createWindowRaw POSTs a MaintenanceWindow body as JSON, and deletes the
// window when the spec ends.
func createWindowRaw(name, spec string) error {
	deleteWindow(name)
	body := fmt.Sprintf(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"MaintenanceWindow","metadata":{"name":%q},"spec":%s}`, name, spec)
	err := adminRaw.Post().Resource("maintenancewindows").Body([]byte(body)).
		SetHeader("Content-Type", "application/json").Do(suiteCtx).Error()
	if err == nil {
		DeferCleanup(deleteWindow, name)
	}
	return err
}

// newWindow is a window for the e2e pool.
func newWindow(name, schedule string, d time.Duration, zone string) *v1alpha1.MaintenanceWindow {
	return &v1alpha1.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.MaintenanceWindowSpec{
			PoolNames: []string{e2ePool}, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: zone,
		},
	}
}

// createWindow creates a window and deletes it when the spec ends.
func createWindow(w *v1alpha1.MaintenanceWindow) *v1alpha1.MaintenanceWindow {
	GinkgoHelper()
	deleteWindow(w.Name)
	created, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Create(suiteCtx, w, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(deleteWindow, w.Name)
	return created
}

var _ = Describe("maintenance windows", startFirst, func() {
	It("are served through the aggregator: create (defaults applied), get, list, update, patch, delete; short name mw", func() {
		windows := advisor.AdvisorV1alpha1().MaintenanceWindows()
		w := newWindow("e2e-weekend", "0 22 * * 6", 8*time.Hour, "")
		w.Spec.Pools = &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}}
		created := createWindow(w)
		Expect(created.Spec.TimeZone).To(Equal("UTC"), "default time zone")
		Expect(created.Spec.Kind).To(Equal(v1alpha1.MaintenanceWindowKindAllow), "default kind")
		Expect(created.Generation).To(Equal(int64(1)))
		Expect(created.Status.OpensAt).NotTo(BeNil(), "the create response carries the computed status")

		got, err := windows.Get(suiteCtx, "e2e-weekend", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(created.UID))
		list, err := windows.List(suiteCtx, metav1.ListOptions{FieldSelector: "spec.kind=Allow"})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(ContainElement(HaveField("Name", "e2e-weekend")))

		got.Spec.TimeZone = "Europe/Berlin"
		got, err = windows.Update(suiteCtx, got, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Generation).To(Equal(int64(2)))
		Expect(got.Status.OpensAt.Time.In(mustLoadLocation("Europe/Berlin")).Format("Mon 15:04")).To(Equal("Sat 22:00"))

		got, err = windows.Patch(suiteCtx, "e2e-weekend", types.MergePatchType, []byte(`{"spec":{"kind":"Deny","description":"no reboots"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.Kind).To(Equal(v1alpha1.MaintenanceWindowKindDeny))

		out, err := kubectl("get", "mw", "e2e-weekend", "-o", "jsonpath={.spec.description}")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("no reboots"))

		By("DELETE returns a Status, not the window (docs/maintenance-windows.md)")
		raw, err := adminRaw.Delete().Resource("maintenancewindows").Name("e2e-weekend").DoRaw(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		var deleted metav1.Status
		Expect(json.Unmarshal(raw, &deleted)).To(Succeed(), string(raw))
		Expect(deleted.Kind).To(Equal("Status"), string(raw))
		Expect(deleted.Status).To(Equal(metav1.StatusSuccess), string(raw))
		Expect(deleted.Details).NotTo(BeNil(), string(raw))
		Expect(deleted.Details.Name).To(Equal("e2e-weekend"))
		Expect(deleted.Details.Kind).To(Equal("maintenancewindows"))
		Expect(deleted.Details.UID).To(Equal(created.UID))
		_, err = windows.Get(suiteCtx, "e2e-weekend", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	})

	It("reads the real end of windows written per minute (issue 24): a weekday freeze closes on Saturday 00:00", func() {
		freeze := newWindow("e2e-weekdays", "* * * * 1-5", time.Minute, "UTC")
		freeze.Spec.Kind = v1alpha1.MaintenanceWindowKindDeny
		created := createWindow(freeze)
		Expect(created.Status.ClosesAt).NotTo(BeNil(), "%+v", created.Status)
		Expect(created.Status.ClosesAt.UTC().Format("Mon 15:04")).To(Equal("Sat 00:00"), "%+v", created.Status)
		got, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Get(suiteCtx, "e2e-weekdays", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.ClosesAt).NotTo(BeNil(), "%+v", got.Status)
		Expect(got.Status.ClosesAt.UTC().Format("Mon 15:04")).To(Equal("Sat 00:00"), "%+v", got.Status)
		Expect(time.Until(got.Status.ClosesAt.Time)).To(BeNumerically("<=", 8*24*time.Hour))
	})

	It("accepts windows as long as their period: a week every week and a minute every minute are open at all times", func() {
		// lastSaturday is the last opening of "0 22 * * 6" in UTC at or before t.
		lastSaturday := func(t time.Time) time.Time {
			t = t.UTC()
			s := time.Date(t.Year(), t.Month(), t.Day(), 22, 0, 0, 0, time.UTC).AddDate(0, 0, -int((t.Weekday()+1)%7))
			if s.After(t) {
				s = s.AddDate(0, 0, -7)
			}
			return s
		}
		// The status is computed at some instant between from and to.
		expectAlwaysOpen := func(st v1alpha1.MaintenanceWindowStatus, from, to time.Time) {
			GinkgoHelper()
			Expect(st.Open).To(BeTrue(), "%+v", st)
			Expect(st.ClosesAt).To(BeNil(), "openings back to back do not close: %+v", st)
			Expect(st.OpensAt).NotTo(BeNil(), "%+v", st)
			Expect(st.OpensAt.Time).To(BeTemporally(">=", lastSaturday(from)), "%+v", st)
			Expect(st.OpensAt.Time).To(BeTemporally("<=", lastSaturday(to)), "%+v", st)
			Expect(st.OpensAt.UTC().Format("Mon 15:04:05")).To(Equal("Sat 22:00:00"), "%+v", st)
		}
		from := time.Now()
		week := createWindow(newWindow("e2e-whole-week", "0 22 * * 6", 7*24*time.Hour, "UTC"))
		expectAlwaysOpen(week.Status, from, time.Now())
		from = time.Now()
		got, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Get(suiteCtx, "e2e-whole-week", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectAlwaysOpen(got.Status, from, time.Now())
		out, err := kubectl("get", "mw", "e2e-whole-week", "--no-headers")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`^e2e-whole-week\s+Allow\s+0 22 \* \* 6\s+7d\s+UTC\s+e2e-windows\s+true\s`))

		By("every minute for a minute: open across the end of one opening and the start of the next")
		createWindow(newWindow("e2e-every-minute-all-of-it", "* * * * *", time.Minute, "UTC"))
		untilSecond(57, 59)
		boundary := time.Now().Truncate(time.Minute).Add(time.Minute)
		readBefore, readAfter := false, false
		for !readAfter || time.Now().Before(boundary.Add(2*time.Second)) {
			before := time.Now()
			got, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Get(suiteCtx, "e2e-every-minute-all-of-it", metav1.GetOptions{})
			after := time.Now()
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Status.Open).To(BeTrue(), "read between %s and %s: %+v", before, after, got.Status)
			Expect(got.Status.ClosesAt).To(BeNil(), "%+v", got.Status)
			Expect(got.Status.OpensAt.Time).To(BeTemporally(">=", before.Truncate(time.Minute)), "%+v", got.Status)
			Expect(got.Status.OpensAt.Time).To(BeTemporally("<=", after), "%+v", got.Status)
			readBefore = readBefore || after.Before(boundary)
			readAfter = readAfter || !before.Before(boundary)
			time.Sleep(200 * time.Millisecond)
		}
		Expect(readBefore).To(BeTrue(), "read before %s, as the opening of the minute ends", boundary)
	})

	DescribeTable("rejects a bad window with 422, the field path and what to do",
		func(spec, fieldPath, message string) {
			expectInvalid(createWindowRaw("e2e-bad", spec), fieldPath, message)
		},
		Entry("bad cron", `{"poolNames":["worker"],"schedule":"every saturday","duration":"8h"}`,
			"spec.schedule", `not a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 22 * * 6"`),
		Entry("an hour that does not exist", `{"poolNames":["worker"],"schedule":"0 25 * * 6","duration":"8h"}`,
			"spec.schedule", "above maximum"),
		Entry("unknown time zone", `{"poolNames":["worker"],"schedule":"0 22 * * 6","duration":"8h","timeZone":"Europe/Atlantis"}`,
			"spec.timeZone", `unknown time zone "Europe/Atlantis": name an IANA time zone such as Europe/Berlin`),
		Entry("zero duration", `{"poolNames":["worker"],"schedule":"0 22 * * 6","duration":"0s"}`,
			"spec.duration", "must be positive"),
		Entry("no duration", `{"poolNames":["worker"],"schedule":"0 22 * * 6"}`,
			"spec.duration", "must be positive"),
		Entry("duration longer than the period", `{"poolNames":["worker"],"schedule":"0 22 * * 6","duration":"192h"}`,
			"spec.duration", `duration 8d is longer than the schedule's period 7d (the shortest time between two openings of "0 22 * * 6")`),
		Entry("every minute for longer than a minute", `{"poolNames":["worker"],"schedule":"* * * * *","duration":"90s"}`,
			"spec.duration", "period 1m"),
		Entry("no pools", `{"schedule":"0 22 * * 6","duration":"8h"}`,
			"spec.pools", "select the MachineConfigPools the window applies to"),
		Entry("bad selector", `{"pools":{"matchExpressions":[{"key":"role","operator":"Sometimes"}]},"schedule":"0 22 * * 6","duration":"8h"}`,
			"spec.pools.matchExpressions[0].operator", "not a valid selector operator"),
		Entry("unknown kind", `{"poolNames":["worker"],"schedule":"0 22 * * 6","duration":"8h","kind":"Maybe"}`,
			"spec.kind", `supported values: "Allow", "Deny"`),
	)

	It("prints NAME KIND SCHEDULE DURATION TIMEZONE POOLS OPEN NEXT, and OPENS AT, CLOSES AT, DESCRIPTION with -o wide", func() {
		weekend := newWindow("e2e-weekend", "0 22 * * 6", 8*time.Hour, "Europe/Berlin")
		weekend.Spec.Pools = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "virt"}}
		createWindow(weekend)
		freeze := newWindow("e2e-freeze", "0 0 24 12 *", 14*24*time.Hour, "Europe/Berlin")
		freeze.Spec.PoolNames, freeze.Spec.Pools = nil, &metav1.LabelSelector{}
		freeze.Spec.Kind, freeze.Spec.Description = v1alpha1.MaintenanceWindowKindDeny, "holidays"
		createWindow(freeze)

		out, err := kubectl("get", "maintenancewindows")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Printf("$ kubectl get maintenancewindows\n%s", out)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		Expect(header).To(Equal([]string{"NAME", "KIND", "SCHEDULE", "DURATION", "TIMEZONE", "POOLS", "OPEN", "NEXT"}))
		Expect(out).To(MatchRegexp(`(?m)^e2e-weekend\s+Allow\s+0 22 \* \* 6\s+8h\s+Europe/Berlin\s+e2e-windows \+ team=virt\s+(true|false)\s+\d+[smhd]`))
		Expect(out).To(MatchRegexp(`(?m)^e2e-freeze\s+Deny\s+0 0 24 12 \*\s+14d\s+Europe/Berlin\s+<all>\s+(true|false)\s+\d+[smhdy]`))

		out, err = kubectl("get", "mw", "e2e-freeze", "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Printf("$ kubectl get mw e2e-freeze -o wide\n%s", out)
		header = strings.Fields(strings.SplitN(out, "\n", 2)[0])
		Expect(header).To(Equal([]string{"NAME", "KIND", "SCHEDULE", "DURATION", "TIMEZONE", "POOLS", "OPEN", "NEXT", "OPENS", "AT", "CLOSES", "AT", "DESCRIPTION"}))
		Expect(out).To(MatchRegexp(`\d{4}-12-24T00:00:00\+01:00\s+\d{4}-01-07T00:00:00\+01:00\s+holidays`))
	})

	It("computes status on read: a window opening every minute for 20 s is open exactly in the first 20 s of each minute", func() {
		createWindow(newWindow("e2e-every-minute", "* * * * *", 20*time.Second, "UTC"))
		windows := advisor.AdvisorV1alpha1().MaintenanceWindows()
		seen := map[bool]bool{}
		// Read until both states were seen, sleeping to the next change.
		deadline := time.Now().Add(90 * time.Second)
		for len(seen) < 2 && time.Now().Before(deadline) {
			before := time.Now()
			got, err := windows.Get(suiteCtx, "e2e-every-minute", metav1.GetOptions{})
			after := time.Now()
			Expect(err).NotTo(HaveOccurred())
			openBefore, openAfter := before.Second() < 20, after.Second() < 20
			if openBefore != openAfter || before.Truncate(time.Minute) != after.Truncate(time.Minute) {
				continue // the read straddled a change: either answer is right
			}
			st := got.Status
			Expect(st.Open).To(Equal(openBefore), "read between %s and %s: %+v", before, after, st)
			minute := before.Truncate(time.Minute)
			if st.Open {
				Expect(st.OpensAt.Time).To(BeTemporally("==", minute))
				Expect(st.ClosesAt.Time).To(BeTemporally("==", minute.Add(20*time.Second)))
			} else {
				Expect(st.OpensAt.Time).To(BeTemporally("==", minute.Add(time.Minute)))
				Expect(st.ClosesAt.Time).To(BeTemporally("==", minute.Add(time.Minute+20*time.Second)))
			}
			out, err := kubectl("get", "mw", "e2e-every-minute", "--no-headers")
			Expect(err).NotTo(HaveOccurred(), out)
			GinkgoWriter.Printf("%s %s", time.Now().UTC().Format("15:04:05"), out)
			seen[st.Open] = true
			if st.Open {
				time.Sleep(time.Until(minute.Add(25 * time.Second)))
			} else {
				time.Sleep(time.Until(minute.Add(time.Minute + 5*time.Second)))
			}
		}
		Expect(seen).To(HaveLen(2), "the window was read both open and closed")
	})

	It("are documented for kubectl explain (OpenAPI v3)", func() {
		out := explain("maintenancewindows.spec")
		Expect(out).To(ContainSubstring("GROUP:      advisor.kubevirt.io"))
		Expect(out).To(ContainSubstring("KIND:       MaintenanceWindow"))
		flat := strings.Join(strings.Fields(out), " ")
		for _, s := range []string{"schedule <string> -required-", "a standard 5-field cron expression", "duration <string> -required-",
			"timeZone <string>", "IANA time zone", "kind <string>", "enum: Allow, Deny", "poolNames <[]string>", "pools <LabelSelector>", "description <string>"} {
			Expect(flat).To(ContainSubstring(s))
		}
		out, err := kubectl("explain", "mw.status.closesAt")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.Join(strings.Fields(out), " ")).To(ContainSubstring("openings that touch or overlap counting as one"))
	})

	It("are read by every virt-advisor role and changed only with virt-advisor-maintenance-window-editor", func() {
		createWindow(newWindow("e2e-weekend", "0 22 * * 6", 8*time.Hour, "Europe/Berlin"))
		for _, role := range []string{"virt-advisor-viewer", "virt-advisor-editor", "virt-advisor-approver"} {
			c, user, kubeconfig := userClient(role)
			windows := c.AdvisorV1alpha1().MaintenanceWindows()
			got, err := windows.Get(suiteCtx, "e2e-weekend", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), role)
			Expect(got.Status.OpensAt).NotTo(BeNil(), role)
			_, err = windows.List(suiteCtx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), role)
			w, err := windows.Watch(suiteCtx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), role)
			w.Stop()

			_, err = windows.Create(suiteCtx, newWindow("e2e-by-"+user, "0 1 * * *", time.Hour, ""), metav1.CreateOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s create: %v", role, err)
			_, err = windows.Patch(suiteCtx, "e2e-weekend", types.MergePatchType, []byte(`{"spec":{"kind":"Deny"}}`), metav1.PatchOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s patch: %v", role, err)
			err = windows.Delete(suiteCtx, "e2e-weekend", metav1.DeleteOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s delete: %v", role, err)
			out, _, _ := testEnv.Kubectl(suiteCtx, kubeconfig, "auth", "can-i", "create", "maintenancewindows.advisor.kubevirt.io")
			Expect(strings.TrimSpace(out)).To(Equal("no"), role)
		}

		c, _, _ := userClient("virt-advisor-maintenance-window-editor")
		windows := c.AdvisorV1alpha1().MaintenanceWindows()
		_, err := windows.Create(suiteCtx, newWindow("e2e-by-window-editor", "0 1 * * *", time.Hour, ""), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteWindow, "e2e-by-window-editor")
		_, err = windows.Patch(suiteCtx, "e2e-weekend", types.MergePatchType, []byte(`{"spec":{"kind":"Deny"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(windows.Delete(suiteCtx, "e2e-by-window-editor", metav1.DeleteOptions{})).To(Succeed())
		_, err = c.AdvisorV1alpha1().VirtPlatformConfigs().List(suiteCtx, metav1.ListOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "the window editor role grants nothing on configs: %v", err)

		nobody, _, _ := userClient("")
		_, err = nobody.AdvisorV1alpha1().MaintenanceWindows().List(suiteCtx, metav1.ListOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "no binding, no windows: %v", err)
	})
})

func mustLoadLocation(name string) *time.Location {
	GinkgoHelper()
	loc, err := time.LoadLocation(name)
	Expect(err).NotTo(HaveOccurred())
	return loc
}
