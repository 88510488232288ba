package plan

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// A kind a profile lists whole is listed once per plan, and a live plan
// starts that list with its other reads, before the profile asks for it.
func TestListedInputsAreListedOnceAndEarlyWhenLive(t *testing.T) {
	topologies := schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}
	for _, tc := range []struct {
		name    string
		from    inputSource
		served  bool
		early   bool // listed before the profile asks
		perPlan int  // lists after the profile asked twice
	}{
		{name: "live, served", from: liveInputs, served: true, early: true, perPlan: 1},
		{name: "live, not served: asked only when the profile lists it", from: liveInputs, served: false, perPlan: 2},
		{name: "from the watch caches: listed when asked", from: watchedInputs, served: true, perPlan: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{unserved: map[string]bool{}}
			c.unserved[topologies.Kind] = !tc.served
			lists := func() int {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.requests["list "+topologies.Kind]
			}
			ctx := context.Background()
			r := newInputReader(ctx, c, []profiles.ObjectRef{{GVK: profiles.NodeGVK}, {GVK: topologies}}, tc.from, nil)
			if tc.early {
				deadline := time.Now().Add(5 * time.Second)
				for lists() == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if lists() != 1 {
					t.Fatalf("listed %d times before the profile asked, want 1", lists())
				}
			}
			for range 2 {
				if _, err := r.List(ctx, topologies); err != nil {
					t.Fatal(err)
				}
			}
			if got := lists(); got != tc.perPlan {
				t.Errorf("listed %d times, want %d", got, tc.perPlan)
			}
		})
	}
}
