package fleethub

import (
	"context"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
)

// storage is FleetConfigs as stored, which the informer's cache may lag.
type storage struct {
	mu     sync.Mutex
	fleets map[string]*v1alpha1.FleetConfig
}

func (s *storage) Get(_ context.Context, namespace, name string) (*v1alpha1.FleetConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc, ok := s.fleets[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "fleetconfigs"}, name)
	}
	return fc.DeepCopy(), nil
}

func (s *storage) Change(ctx context.Context, namespace, name string, change func(*v1alpha1.FleetConfig) error) (*v1alpha1.FleetConfig, error) {
	fc, err := s.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if err := change(fc); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fleets[namespace+"/"+name] = fc
	return fc.DeepCopy(), nil
}

func approvedFleet(hash string, abort bool) *v1alpha1.FleetConfig {
	fc := &v1alpha1.FleetConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "psi", Namespace: "fleets", Generation: 1},
		Spec: v1alpha1.FleetConfigSpec{Profile: "load-aware-rebalancing", PlacementRef: v1alpha1.FleetPlacementRef{Name: "virt-clusters"},
			RolloutStrategy: v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutTypeAll}},
		Status: v1alpha1.FleetConfigStatus{Approval: &v1alpha1.FleetApprovalRecord{FleetHash: hash, ApprovedBy: "fleet-approver", Generation: 1,
			Clusters: []v1alpha1.ClusterPlanHash{{Name: "spoke-a", PlanHash: strings.Repeat("a", 64)}}}},
	}
	if abort {
		fc.Status.Abort = &v1alpha1.FleetAbortRecord{AbortedBy: "fleet-approver"}
	}
	return fc
}

// TestApplyReadsStorageNotTheCache: the ManifestWorkReplicaSet, which is
// what reaches the clusters, is written from the stored FleetConfig. A
// cache still showing the approval an abort ended must not send that
// approval again, nor a cache behind a new approval withhold it.
func TestApplyReadsStorageNotTheCache(t *testing.T) {
	approved, aborted, next := strings.Repeat("1", 64), strings.Repeat("1", 64), strings.Repeat("2", 64)
	tests := []struct {
		name            string
		cached, stored  *v1alpha1.FleetConfig
		wantHash        string
		wantAbortedBy   bool
		wantReplicaSets int
	}{
		{"aborted since the cache saw it", approvedFleet(approved, false), approvedFleet(aborted, true), aborted, true, 1},
		{"approved again since", approvedFleet(approved, true), approvedFleet(next, false), next, false, 1},
		{"as cached", approvedFleet(approved, false), approvedFleet(approved, false), approved, false, 1},
		{"deleted since", approvedFleet(approved, false), nil, "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			hub := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
				fleet.ManifestWorkReplicaSetGVR: "ManifestWorkReplicaSetList",
				fleet.ManifestWorkGVR:           "ManifestWorkList",
				fleet.PlacementDecisionGVR:      "PlacementDecisionList",
			})
			var written []string
			hub.PrependReactor("patch", "manifestworkreplicasets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				written = append(written, string(a.(clienttesting.PatchAction).GetPatch()))
				return true, nil, nil
			})
			informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.FleetConfig{}, 0,
				cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if err := informer.GetIndexer().Add(tt.cached); err != nil {
				t.Fatal(err)
			}
			st := &storage{fleets: map[string]*v1alpha1.FleetConfig{}}
			if tt.stored != nil {
				st.fleets["fleets/psi"] = tt.stored
			}
			c := New(informer, &fleet.Reader{Hub: hub}, st)
			if err := c.reconcile(context.Background(), "fleets/psi"); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if len(written) != tt.wantReplicaSets {
				t.Fatalf("%d ManifestWorkReplicaSet writes, want %d", len(written), tt.wantReplicaSets)
			}
			if tt.wantReplicaSets == 0 {
				return
			}
			if !strings.Contains(written[0], `"fleetHash":"`+tt.wantHash+`"`) {
				t.Errorf("the ManifestWorkReplicaSet carries no approval of %s:\n%s", tt.wantHash, written[0])
			}
			if got := strings.Contains(written[0], `"abortedBy"`); got != tt.wantAbortedBy {
				t.Errorf("the ManifestWorkReplicaSet carries the abort: %t, want %t:\n%s", got, tt.wantAbortedBy, written[0])
			}
		})
	}
}
