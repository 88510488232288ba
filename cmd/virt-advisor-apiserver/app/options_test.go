package app

import (
	"strings"
	"testing"
	"time"
)

func TestValidateRolloutCoalesceWindow(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		valid  bool
	}{
		{30 * time.Second, true},
		{0, true},
		{-time.Second, false},
	} {
		o := NewOptions()
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:2379"}
		o.RolloutCoalesceWindow = tc.window
		err := o.Validate()
		flagged := err != nil && strings.Contains(err.Error(), "--rollout-coalesce-window must be 0 (no pause) or more")
		if flagged == tc.valid {
			t.Errorf("window %s: got %v", tc.window, err)
		}
	}
	if NewOptions().RolloutCoalesceWindow != 30*time.Second {
		t.Error("the default window is 30s")
	}
}
