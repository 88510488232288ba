package pools

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
)

const roleLabel = "machineconfiguration.openshift.io/role"

func TestSummaryNeverFails(t *testing.T) {
	create := v1alpha1.PlanItem{Name: "psi", Operation: v1alpha1.OperationCreate,
		TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)}}
	deleted := v1alpha1.PlanItem{Name: "swap", Operation: v1alpha1.OperationDelete,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "90-worker-kubelet-swap"}}
	liveSwap := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]interface{}{"name": "90-worker-kubelet-swap", "labels": map[string]interface{}{roleLabel: "worker"}}}}
	unchanged := create
	unchanged.Operation = v1alpha1.OperationNone
	// A KubeletConfig rolls the pools its selector selects by their labels.
	kcRef := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "dedicated-cpus"}
	kcCreate := v1alpha1.PlanItem{Name: "kc", Operation: v1alpha1.OperationCreate, TargetRef: kcRef,
		DesiredState: &runtime.RawExtension{Raw: []byte(`{"spec":{"machineConfigPoolSelector":{"matchLabels":{"pools.operator.machineconfiguration.openshift.io/worker-cnv":""}}}}`)}}
	kcDelete := v1alpha1.PlanItem{Name: "kc", Operation: v1alpha1.OperationDelete, TargetRef: kcRef}
	liveKC := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
		"metadata": map[string]interface{}{"name": "dedicated-cpus"},
		"spec": map[string]interface{}{"machineConfigPoolSelector": map[string]interface{}{"matchLabels": map[string]interface{}{
			"pools.operator.machineconfiguration.openshift.io/worker-cnv": ""}}}}}
	cnv := machineconfigtest.Pool("worker-cnv", machineconfigtest.RoleSelector("worker", "worker-cnv"), 2, 2, false)
	cnv.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/worker-cnv": ""})
	worker := machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 3, false)

	for _, tc := range []struct {
		name    string
		items   []v1alpha1.PlanItem
		objects []runtime.Object
		listErr error
		want    string
	}{
		{"nothing to reboot needs no pools", []v1alpha1.PlanItem{unchanged}, nil, errors.New("must not be listed"), "none"},
		{"pools forbidden", []v1alpha1.PlanItem{create}, nil,
			apierrors.NewForbidden(machineconfig.MachineConfigPools.GroupResource(), "", errors.New(`User "bob" cannot list resource "machineconfigpools" in API group "machineconfiguration.openshift.io" at the cluster scope`)),
			`unknown (cannot read MachineConfigPools: user "bob" may not list machineconfigpools)`},
		{"pools not served", []v1alpha1.PlanItem{create}, nil, apierrors.NewGenericServerResponse(404, "list", machineconfig.MachineConfigPools.GroupResource(), "", "", 0, false),
			`unknown (cannot read MachineConfigPools: the server could not find the requested resource (list machineconfigpools.machineconfiguration.openshift.io))`},
		{"a delete reads the live labels", []v1alpha1.PlanItem{deleted}, []runtime.Object{liveSwap, machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 3, false)}, nil,
			"pool worker, 3 nodes, once"},
		{"a KubeletConfig rolls the pool its selector selects", []v1alpha1.PlanItem{kcCreate}, []runtime.Object{cnv, worker}, nil, "pool worker-cnv, 2 nodes, once"},
		{"a deleted KubeletConfig is read for its selector", []v1alpha1.PlanItem{kcDelete}, []runtime.Object{liveKC, cnv, worker}, nil, "pool worker-cnv, 2 nodes, once"},
		{"a change the server says reboots counts", []v1alpha1.PlanItem{withDisruption(create, v1alpha1.NodeDisruptionReboot)},
			[]runtime.Object{machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 3, false)}, nil, "pool worker, 3 nodes, once"},
		{"a change a node disruption policy applies in place reboots nothing", []v1alpha1.PlanItem{withDisruption(create, v1alpha1.NodeDisruptionNone)},
			nil, errors.New("must not be listed"), "none"},
		{"nor does a drain without a reboot", []v1alpha1.PlanItem{withDisruption(create, v1alpha1.NodeDisruptionDrain)},
			nil, errors.New("must not be listed"), "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeDynamic(tc.objects...)
			if tc.listErr != nil {
				dyn.PrependReactor("list", "machineconfigpools", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.listErr
				})
			}
			if got := Summary(context.Background(), dyn, tc.items); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func fakeDynamic(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{machineconfig.MachineConfigPools: "MachineConfigPoolList", machineconfig.MachineConfigs: "MachineConfigList",
			machineconfig.KubeletConfigs: "KubeletConfigList"}, objects...)
}

func withDisruption(it v1alpha1.PlanItem, d v1alpha1.NodeDisruption) v1alpha1.PlanItem {
	it.Reboots = []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: d}}
	return it
}
