package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestWaitFor(t *testing.T) {
	drifted := &v1alpha1.VirtPlatformConfig{Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseDrifted}}
	completed := &v1alpha1.VirtPlatformConfig{Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseCompleted}}
	isDrifted := func(ev watch.Event) bool {
		c, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
		return ok && c.Status.Phase == v1alpha1.PhaseDrifted
	}
	tests := []struct {
		name    string
		events  func(*watch.FakeWatcher)
		wantErr string
	}{
		{name: "the matching event", events: func(w *watch.FakeWatcher) {
			w.Modify(completed)
			w.Modify(drifted)
		}},
		{name: "the watch closes first", events: func(w *watch.FakeWatcher) {
			w.Modify(completed)
			w.Stop()
		}, wantErr: "the watch closed before x Drifted was seen"},
		{name: "the watch fails", events: func(w *watch.FakeWatcher) {
			w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone, Message: "too old resource version"})
		}, wantErr: "the watch failed before x Drifted was seen: too old resource version"},
		{name: "nothing comes", events: func(w *watch.FakeWatcher) {
			w.Modify(completed)
		}, wantErr: "x Drifted was not seen within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := watch.NewFakeWithChanSize(10, false)
			tt.events(w)
			start := time.Now()
			at, err := waitFor(w, 50*time.Millisecond, "x Drifted", isDrifted)
			if tt.wantErr == "" {
				if err != nil || at.Before(start) {
					t.Fatalf("waitFor() = %v, %v; want the time of the match", at, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("waitFor() error = %v, want %q", err, tt.wantErr)
			}
			if !at.IsZero() {
				t.Errorf("waitFor() returned a time (%v) with its error: it would become a sample", at)
			}
		})
	}
}

func TestReportCheck(t *testing.T) {
	var r report
	if !r.check("at the target", "ms", 500, 500) {
		t.Error("a figure equal to its target must meet it")
	}
	if r.check("above the target", "x", 1.81, 1.5) {
		t.Error("a figure above its target must miss it")
	}
	r.add("no target", "ms", 3)
	if len(r.Figures) != 3 {
		t.Fatalf("%d figures, want 3", len(r.Figures))
	}
	if want := []string{"above the target: 1.81 x, target <= 1.50 x"}; len(r.Missed) != 1 || r.Missed[0] != want[0] {
		t.Errorf("Missed = %q, want %q", r.Missed, want)
	}
	if f := r.Figures[2]; f.Max != nil || f.Met != nil {
		t.Errorf("a figure without target has Max %v, Met %v", f.Max, f.Met)
	}
}

func TestChooseSteps(t *testing.T) {
	tests := []struct {
		list, want, err string
	}{
		{list: "plan,burst,apply,drift,memory,vms", want: "plan,burst,apply,drift,memory,vms"},
		{list: "vms", want: "vms"},
		{list: "vms, plan", want: "plan,vms"},
		{list: "vm", err: `unknown measurement "vm"`},
		{list: "", err: "no measurement chosen"},
	}
	for _, tt := range tests {
		got, err := chooseSteps(tt.list)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("chooseSteps(%q) error = %v, want %q", tt.list, err, tt.err)
		case tt.err == "" && (err != nil || strings.Join(got, ",") != tt.want):
			t.Errorf("chooseSteps(%q) = %v, %v; want %s", tt.list, got, err, tt.want)
		}
	}
}

func TestLastSeen(t *testing.T) {
	drifted := &v1alpha1.VirtPlatformConfig{Status: v1alpha1.VirtPlatformConfigStatus{
		Phase:      v1alpha1.PhaseDrifted,
		Conditions: []metav1.Condition{{Type: string(v1alpha1.PhaseDrifted), Status: metav1.ConditionTrue, Reason: "DriftDetected", Message: "spec.mode changed"}},
		Items:      []v1alpha1.VirtPlatformConfigItem{{Name: "enable-load-aware-descheduling", Operation: v1alpha1.OperationUpdate, State: v1alpha1.ItemStateCompleted, Message: "Drifted: spec.mode no longer as applied"}},
	}}
	for _, tc := range []struct {
		name string
		cfg  *v1alpha1.VirtPlatformConfig
		want string
	}{
		{"never read", nil, "never read"},
		{"drifted", drifted, `last seen "Drifted", DriftDetected: spec.mode changed; item enable-load-aware-descheduling Update Completed: Drifted: spec.mode no longer as applied`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastSeen(tc.cfg); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
