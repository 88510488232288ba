package maintenancewindow_test

import (
	"context"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // time zones load without the machine's zoneinfo

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
	"github.com/kubevirt/virt-advisor/pkg/registry/maintenancewindow"
)

// newStorage returns the storage on a fresh embedded etcd, the etcd the
// server runs by default, with a clock the test sets, and an etcd client
// to look at what is stored.
func newStorage(t *testing.T, clock *clocktesting.FakePassiveClock) (*maintenancewindow.REST, *clientv3.Client) {
	t.Helper()
	etcd, err := embeddedetcd.Start(t.TempDir(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	cfg := storagebackend.NewDefaultConfig("/registry/advisor.kubevirt.io", apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = []string{etcd.ClientURL}
	opts := generic.RESTOptions{
		StorageConfig:  cfg.ForResource(advisor.Resource("maintenancewindows")),
		Decorator:      generic.UndecoratedStorage,
		ResourcePrefix: "maintenancewindows",
	}
	r, err := maintenancewindow.NewREST(apiserver.Scheme, getter{opts}, maintenancewindow.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Store.DestroyFunc)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return r, client
}

type getter struct{ opts generic.RESTOptions }

func (g getter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return g.opts, nil
}

func ctx() context.Context {
	return genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
}

// minute opens every minute for 20 s, in Europe/Berlin.
func minute(name string) *advisor.MaintenanceWindow {
	return &advisor.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: advisor.MaintenanceWindowSpec{
			PoolNames: []string{"worker"}, Schedule: "* * * * *", Duration: metav1.Duration{Duration: 20 * time.Second},
			TimeZone: "Europe/Berlin", Kind: advisor.MaintenanceWindowKindAllow,
		},
	}
}

func berlin(t *testing.T, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStatusIsComputedOnReadAndNeverStored(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(berlin(t, "2026-03-28 12:00:05"))
	r, etcd := newStorage(t, clock)

	in := minute("every-minute")
	forged := metav1.NewTime(berlin(t, "2000-01-01 00:00:00"))
	in.Status = advisor.MaintenanceWindowStatus{Open: false, OpensAt: &forged}
	obj, err := r.Create(ctx(), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*advisor.MaintenanceWindow)
	if created.Generation != 1 {
		t.Errorf("generation %d, want 1", created.Generation)
	}
	expectStatus(t, "create", created, true, "2026-03-28 12:00:00", "2026-03-28 12:00:20")

	stored, err := etcd.Get(context.Background(), "/registry/advisor.kubevirt.io/maintenancewindows/every-minute")
	if err != nil || len(stored.Kvs) != 1 {
		t.Fatalf("stored object: %v, %v", stored, err)
	}
	if s := string(stored.Kvs[0].Value); strings.Contains(s, "opensAt") || strings.Contains(s, "closesAt") || strings.Contains(s, `"open":true`) {
		t.Errorf("status was stored: %s", s)
	}

	steps := []struct {
		now            string
		open           bool
		opens, closes  string
		viaList, watch bool
	}{
		{"2026-03-28 12:00:19", true, "2026-03-28 12:00:00", "2026-03-28 12:00:20", false, false},
		{"2026-03-28 12:00:20", false, "2026-03-28 12:01:00", "2026-03-28 12:01:20", false, false},
		{"2026-03-28 12:00:59", false, "2026-03-28 12:01:00", "2026-03-28 12:01:20", true, false},
		{"2026-03-28 12:01:00", true, "2026-03-28 12:01:00", "2026-03-28 12:01:20", true, false},
	}
	for _, s := range steps {
		clock.SetTime(berlin(t, s.now))
		var got *advisor.MaintenanceWindow
		if s.viaList {
			list, err := r.List(ctx(), &metainternalversion.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = &list.(*advisor.MaintenanceWindowList).Items[0]
		} else {
			obj, err := r.Get(ctx(), "every-minute", &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = obj.(*advisor.MaintenanceWindow)
		}
		expectStatus(t, "read at "+s.now, got, s.open, s.opens, s.closes)
	}
}

func TestUpdateDropsStatusAndCountsSpecChanges(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(berlin(t, "2026-03-28 12:00:30"))
	r, _ := newStorage(t, clock)
	created, err := r.Create(ctx(), minute("w"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Watch(ctx(), &metainternalversion.ListOptions{ResourceVersion: created.(*advisor.MaintenanceWindow).ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	update := func(mutate func(*advisor.MaintenanceWindow)) *advisor.MaintenanceWindow {
		t.Helper()
		obj, err := r.Get(ctx(), "w", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := obj.(*advisor.MaintenanceWindow).DeepCopy()
		mutate(c)
		out, _, err := r.Update(ctx(), "w", rest.DefaultUpdatedObjectInfo(c), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*advisor.MaintenanceWindow)
	}
	got := update(func(c *advisor.MaintenanceWindow) { c.Labels = map[string]string{"team": "virt"}; c.Status.Open = true })
	if got.Generation != 1 {
		t.Errorf("a label change made generation %d", got.Generation)
	}
	expectStatus(t, "after a status write", got, false, "2026-03-28 12:01:00", "2026-03-28 12:01:20")

	got = update(func(c *advisor.MaintenanceWindow) { c.Spec.Duration = metav1.Duration{Duration: 45 * time.Second} })
	if got.Generation != 2 {
		t.Errorf("a spec change made generation %d, want 2", got.Generation)
	}
	expectStatus(t, "after the duration grew", got, true, "2026-03-28 12:00:00", "2026-03-28 12:00:45")

	// Watch events carry the status too, computed when they are sent.
	for i := 0; i < 2; i++ {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				t.Fatalf("event %s", ev.Type)
			}
			if i == 1 {
				expectStatus(t, "watch event", ev.Object.(*advisor.MaintenanceWindow), true, "2026-03-28 12:00:00", "2026-03-28 12:00:45")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
	}

	_, _, err = r.Update(ctx(), "w", rest.DefaultUpdatedObjectInfo(func() *advisor.MaintenanceWindow {
		c := got.DeepCopy()
		c.Spec.Duration = metav1.Duration{Duration: 2 * time.Minute}
		return c
	}()), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.duration") || !strings.Contains(err.Error(), "longer than the schedule's period 1m") {
		t.Fatalf("want 422 on spec.duration, got %v", err)
	}
}

func TestCreateRejectsBadWindowsWithFieldPaths(t *testing.T) {
	r, _ := newStorage(t, clocktesting.NewFakePassiveClock(time.Now()))
	tests := []struct {
		name   string
		mutate func(*advisor.MaintenanceWindow)
		field  string
	}{
		{"bad cron", func(w *advisor.MaintenanceWindow) { w.Spec.Schedule = "every minute" }, "spec.schedule"},
		{"unknown time zone", func(w *advisor.MaintenanceWindow) { w.Spec.TimeZone = "Mars/Base" }, "spec.timeZone"},
		{"zero duration", func(w *advisor.MaintenanceWindow) { w.Spec.Duration = metav1.Duration{} }, "spec.duration"},
		{"no pools", func(w *advisor.MaintenanceWindow) { w.Spec.PoolNames = nil }, "spec.pools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := minute("bad")
			tt.mutate(w)
			_, err := r.Create(ctx(), w, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422, got %v", err)
			}
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != 1 || causes[0].Field != tt.field {
				t.Fatalf("want one cause on %s, got %+v", tt.field, causes)
			}
		})
	}
}

func TestTable(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(berlin(t, "2026-03-25 10:00:00"))
	r, _ := newStorage(t, clock)
	weekend := &advisor.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: "weekend"},
		Spec: advisor.MaintenanceWindowSpec{
			PoolNames: []string{"worker"}, Pools: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "cnv"}},
			Schedule: "0 22 * * 6", Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Berlin",
			Kind: advisor.MaintenanceWindowKindAllow, Description: "Saturday nights",
		},
	}
	holidays := &advisor.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: "holidays"},
		Spec: advisor.MaintenanceWindowSpec{
			Pools: &metav1.LabelSelector{}, Schedule: "0 0 24 12 *", Duration: metav1.Duration{Duration: 14 * 24 * time.Hour},
			TimeZone: "Europe/Berlin", Kind: advisor.MaintenanceWindowKindDeny,
		},
	}
	for _, w := range []*advisor.MaintenanceWindow{weekend, holidays} {
		if _, err := r.Create(ctx(), w, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := r.List(ctx(), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := r.ConvertToTable(ctx(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			header = append(header, c.Name)
		}
	}
	if got := strings.Join(header, ","); got != "Name,Kind,Schedule,Duration,TimeZone,Pools,Open,Next" {
		t.Errorf("columns %s", got)
	}
	want := map[string][]interface{}{
		"holidays": {"holidays", "Deny", "0 0 24 12 *", "14d", "Europe/Berlin", "<all>", false, "273d",
			"2026-12-24T00:00:00+01:00", "2027-01-07T00:00:00+01:00", ""},
		"weekend": {"weekend", "Allow", "0 22 * * 6", "8h", "Europe/Berlin", "worker + role=cnv", false, "3d12h",
			"2026-03-28T22:00:00+01:00", "2026-03-29T07:00:00+02:00", "Saturday nights"},
	}
	if len(table.Rows) != 2 {
		t.Fatalf("%d rows", len(table.Rows))
	}
	for _, row := range table.Rows {
		name := row.Cells[0].(string)
		for i, cell := range row.Cells {
			if cell != want[name][i] {
				t.Errorf("%s: column %s is %v, want %v", name, table.ColumnDefinitions[i].Name, cell, want[name][i])
			}
		}
	}
}

func expectStatus(t *testing.T, what string, w *advisor.MaintenanceWindow, open bool, opens, closes string) {
	t.Helper()
	st := w.Status
	if st.Open != open || st.OpensAt == nil || st.ClosesAt == nil ||
		!st.OpensAt.Equal(&metav1.Time{Time: berlin(t, opens)}) || !st.ClosesAt.Equal(&metav1.Time{Time: berlin(t, closes)}) {
		t.Errorf("%s: status %+v (opensAt %v, closesAt %v), want open %t from %s to %s", what, st, st.OpensAt, st.ClosesAt, open, opens, closes)
	}
}
