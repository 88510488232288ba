package main

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
)

// The approval floor is what the approval figure cannot go below with the
// two writes it needs, one after the other: an update in the server's own
// storage (the intent to write) and the approved target's server-side
// apply, until a watch sees it. The bench measures both parts in the same
// run as the approvals: the mean of the server's storage updates of
// VirtPlatformConfigs during the approvals (its etcd request metric), and
// the approved KubeDescheduler applied again as the server's
// ServiceAccount (the same desired state, field manager, precondition and
// admission policy) straight to kube-apiserver, between two approvals,
// once the control plane is quiet (the server re-plans after its own
// write of the KubeDescheduler, an input of the profile as well as its
// target, a few milliseconds after the approval's write).

const (
	// floorQuietWindow and floorQuietBudget: how quiet is looked for before
	// each floor apply (see quiet), and for how long at most.
	floorQuietWindow = 250 * time.Millisecond
	floorQuietBudget = 10 * time.Second
)

// storageUpdates are the sum (seconds) and count of the server's updates
// of VirtPlatformConfigs in its own storage so far (intent and status
// writes).
func (b *bench) storageUpdates() (metricTotals, error) {
	m, err := b.serverMetrics()
	if err != nil {
		return metricTotals{}, err
	}
	labels := map[string]string{"operation": "update", "group": "advisor.kubevirt.io", "resource": "virtplatformconfigs"}
	return metricTotals{sum: m.Sum("etcd_request_duration_seconds", labels), count: float64(m.Count("etcd_request_duration_seconds", labels))}, nil
}

// reportApprovalFloor adds the floor's figures (storageMean in ms) and
// checks the approval's p50 (written50) against it.
func (b *bench) reportApprovalFloor(written50 time.Duration, storageMean float64, applies []time.Duration) {
	a50, _ := percentiles(applies)
	floor := ms(a50) + storageMean
	b.report.add("server storage update mean during the approvals", "ms", storageMean)
	b.report.add("approved KubeDescheduler applied as the server, to a watch, p50", "ms", ms(a50))
	b.report.add("approval floor: storage update mean + that apply p50", "ms", floor)
	b.printf("approval floor               %6.1fms: a storage update of the server (mean %.1fms during the approvals), then the approved\n"+
		"                                        KubeDescheduler applied as the server's ServiceAccount straight to kube-apiserver, to a watch (p50 %.1fms, n=%d)\n",
		floor, storageMean, ms(a50), len(applies))
	factor := ms(written50) / floor
	met := b.report.check("approval to target written p50 / approval floor", "x", factor, *approvalFloorFactor)
	b.printf("approval -> target written p50 / floor %.2f (target <= %.2f: %s)\n", factor, *approvalFloorFactor, verdict(met))
}

// serverKubeDeschedulers is the KubeDeschedulers' resource as the
// server's ServiceAccount writes them.
func (b *bench) serverKubeDeschedulers() (dynamic.ResourceInterface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", b.e.AdvisorKubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapping, err := b.mapper.RESTMapping(kdGVK.GroupKind(), kdGVK.Version)
	if err != nil {
		return nil, err
	}
	return client.Resource(mapping.Resource).Namespace(kdNS), nil
}

// approvedKubeDescheduler is the desired state of a plan's KubeDescheduler.
func approvedKubeDescheduler(items []v1alpha1.PlanItem) (*unstructured.Unstructured, error) {
	for _, it := range items {
		if it.TargetRef.Kind == kdGVK.Kind && it.DesiredState != nil {
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal(it.DesiredState.Raw, &obj.Object); err != nil {
				return nil, err
			}
			return obj, nil
		}
	}
	return nil, fmt.Errorf("the approved plan has no KubeDescheduler item")
}

// floorApply applies desired, with deschedulingIntervalSeconds interval,
// through asServer as the server writes a target (conditional on the
// resourceVersion read) and returns how long until a watch of kd saw it.
func (b *bench) floorApply(kd, asServer dynamic.ResourceInterface, desired *unstructured.Unstructured, interval int64) (time.Duration, error) {
	live, err := kd.Get(b.ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	obj := desired.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, interval, "spec", "deschedulingIntervalSeconds"); err != nil {
		return 0, err
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	w, err := kd.Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=cluster", ResourceVersion: live.GetResourceVersion()})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := asServer.Apply(b.ctx, "cluster", obj, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true}); err != nil {
		return 0, err
	}
	seen, err := waitFor(w, budget, fmt.Sprintf("KubeDescheduler with deschedulingIntervalSeconds %d", interval), intervalIs(interval))
	return seen.Sub(start), err
}
