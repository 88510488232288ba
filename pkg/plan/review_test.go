package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func TestCheckTarget(t *testing.T) {
	const config = "load-aware-rebalancing"
	mc := func(uid string, karg string, labels map[string]string, managers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"kernelArguments": []interface{}{karg}}}}
		u.SetGroupVersionKind(machineconfig.MachineConfigGVK)
		u.SetName("99-worker-psi-karg")
		u.SetUID(types.UID(uid))
		u.SetLabels(labels)
		clustertest.SetAppliers(u, managers...)
		return u
	}
	ours := map[string]string{profiles.ManagedByLabel: config, machineconfig.RoleLabel: "worker"}
	desired := mc("", "psi=1", ours)
	desiredRaw, _ := desired.MarshalJSON()
	reviewed := func(live *unstructured.Unstructured) *v1alpha1.ReviewedTarget {
		snap := snapshotValue(live, []string{"spec.kernelArguments"}, boundMetaOf(desired))
		h, _ := hashJSON(snap)
		rt := &v1alpha1.ReviewedTarget{SnapshotHash: h, FieldHashes: fieldHashes(snap)}
		if live != nil {
			rt.UID = live.GetUID()
		}
		return rt
	}
	item := func(op v1alpha1.Operation, rt *v1alpha1.ReviewedTarget) *v1alpha1.VirtPlatformConfigItem {
		return &v1alpha1.VirtPlatformConfigItem{Name: "enable-psi-metrics", Operation: op, ReviewedTarget: rt,
			TargetRef:     v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
			DesiredState:  &runtime.RawExtension{Raw: desiredRaw},
			ManagedFields: []string{"spec.kernelArguments"}}
	}
	adminMC := mc("admin-uid", "psi=0", nil, "kubectl-client-side-apply")
	for _, tc := range []struct {
		name   string
		live   *unstructured.Unstructured
		item   *v1alpha1.VirtPlatformConfigItem
		retry  bool
		bypass bool
		stale  string // "" passes
	}{
		{"create, still absent", nil, item(v1alpha1.OperationCreate, reviewed(nil)), false, false, ""},
		{"create, someone made it meanwhile", adminMC, item(v1alpha1.OperationCreate, reviewed(nil)), false, false,
			"was created by someone else after the plan was reviewed (field managers: kubectl-client-side-apply)"},
		{"create, someone made it meanwhile, bypassOptimisticLock does not write over it", adminMC, item(v1alpha1.OperationCreate, reviewed(nil)), false, true,
			"was created by someone else"},
		{"create retried after a crash: our own write", mc("our-uid", "psi=1", ours, cluster.FieldManager), item(v1alpha1.OperationCreate, reviewed(nil)), true, false, ""},
		{"create retried, someone else's object of the same content", mc("x", "psi=1", ours, "kubectl-create"), item(v1alpha1.OperationCreate, reviewed(nil)), true, false,
			"was created by someone else"},
		{"update, unchanged", adminMC, item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, false, ""},
		{"update, managed field changed", mc("admin-uid", "psi=2", nil, "kubectl-edit"), item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, false,
			"changed after the plan was reviewed (spec.kernelArguments)"},
		{"update, managed field changed, bypassOptimisticLock", mc("admin-uid", "psi=2", nil, "kubectl-edit"), item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, true, ""},
		{"update retried: our own write changed it", mc("admin-uid", "psi=1", ours, cluster.FieldManager), item(v1alpha1.OperationUpdate, reviewed(adminMC)), true, false, ""},
		// The write sets the role label too: a relabel after the review
		// moves the MachineConfig to pools nobody assessed.
		{"update, role label set after the review", mc("admin-uid", "psi=0", map[string]string{machineconfig.RoleLabel: "infra"}, "kubectl-label"), item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, false,
			"changed after the plan was reviewed (metadata.labels[machineconfiguration.openshift.io/role])"},
		{"update of ours, role label changed after the review", mc("our-uid", "psi=0", map[string]string{profiles.ManagedByLabel: config, machineconfig.RoleLabel: "infra"}, cluster.FieldManager, "kubectl-label"),
			item(v1alpha1.OperationUpdate, reviewed(mc("our-uid", "psi=0", ours, cluster.FieldManager))), false, false,
			"changed after the plan was reviewed (metadata.labels[machineconfiguration.openshift.io/role])"},
		{"update retried, our write's labels relabelled by someone else", mc("admin-uid", "psi=1", map[string]string{profiles.ManagedByLabel: config, machineconfig.RoleLabel: "infra"}, cluster.FieldManager, "kubectl-label"),
			item(v1alpha1.OperationUpdate, reviewed(adminMC)), true, false, "changed after the plan was reviewed"},
		{"update, deleted meanwhile", nil, item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, false, "was deleted after the plan was reviewed"},
		{"update, deleted and created again", mc("new-uid", "psi=0", nil, "kubectl-create"), item(v1alpha1.OperationUpdate, reviewed(adminMC)), false, true,
			"was deleted and created again after the plan was reviewed"},
		{"delete, gone by our write before a crash", nil, item(v1alpha1.OperationDelete, reviewed(mc("our-uid", "psi=1", ours, cluster.FieldManager))), true, false, ""},
		{"delete, replaced by someone else's", adminMC, item(v1alpha1.OperationDelete, reviewed(mc("our-uid", "psi=1", ours, cluster.FieldManager))), false, false,
			"was deleted and created again"},
		{"approved before targets were recorded", adminMC, item(v1alpha1.OperationUpdate, nil), false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gvr := schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
			var objs []runtime.Object
			if tc.live != nil {
				objs = append(objs, tc.live)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "MachineConfigList"}, objs...)
			e := &Engine{Cluster: &cluster.Cluster{Dynamic: dyn, Mapper: clustertest.ClusterScoped(machineconfig.MachineConfigGVK)}}
			cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: config}}
			read, _, err := e.CheckTarget(context.Background(), cfg, tc.item, TargetCheck{Retry: tc.retry, Bypass: tc.bypass})
			// A first write checks its target as the whole plan's read
			// found it: the same verdict from one read.
			_, targets, rerr := e.ReadTargets(context.Background(), []v1alpha1.VirtPlatformConfigItem{*tc.item})
			if rerr != nil {
				t.Fatalf("reading the plan's targets: %v", rerr)
			}
			if (targets[0].Object == nil) != (tc.live == nil) {
				t.Fatalf("ReadTargets read %v, want the live target %v", targets[0].Object, tc.live)
			}
			if legacy := tc.item.ReviewedTarget == nil; targets[0].ReadAt != read.ReadAt || read.Read == legacy {
				t.Fatalf("the plan's read is at resourceVersion %q, the item's own at %q (read: %v)", targets[0].ReadAt, read.ReadAt, read.Read)
			}
			if _, err2 := e.CheckReadTarget(cfg, tc.item, targets[0].Object, TargetCheck{Retry: tc.retry, Bypass: tc.bypass}); fmt.Sprint(err2) != fmt.Sprint(err) {
				t.Fatalf("checked from the plan's read: %v, from its own read: %v", err2, err)
			}
			var stale *StaleTargetError
			switch {
			case tc.stale == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.stale != "" && (!errors.As(err, &stale) || !strings.Contains(err.Error(), tc.stale)):
				t.Fatalf("got %v, want a stale target: %q", err, tc.stale)
			}
		})
	}
}

// Without a watch cache, the checks before a first write are expected to
// read only what needs no read: a target reviewed as absent.
func TestExpectedTargetWithoutACache(t *testing.T) {
	e := &Engine{Cluster: &fakeCluster{}}
	cfg := &v1alpha1.VirtPlatformConfig{}
	for _, tc := range []struct {
		name     string
		reviewed *v1alpha1.ReviewedTarget
		ok       bool
	}{
		{name: "approved before targets were recorded", reviewed: nil, ok: false},
		{name: "reviewed absent: expected absent", reviewed: &v1alpha1.ReviewedTarget{}, ok: true},
		{name: "reviewed present, no cache holds it", reviewed: &v1alpha1.ReviewedTarget{UID: "uid-1"}, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := &v1alpha1.VirtPlatformConfigItem{Name: "item", Operation: v1alpha1.OperationUpdate, ReviewedTarget: tc.reviewed,
				TargetRef: v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}}
			obj, ok := e.ExpectedTarget(cfg, it)
			if ok != tc.ok || obj != nil {
				t.Errorf("ExpectedTarget = %v, %t; want nil, %t", obj, ok, tc.ok)
			}
		})
	}
}
