package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned/fake"
	"github.com/kubevirt/virt-advisor/pkg/generated/informers/externalversions"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

// clientStatus writes status through a clientset, so that the informer
// sees it as it would see the storage's writes.
type clientStatus struct{ client versioned.Interface }

func (s clientStatus) GetStored(ctx context.Context, name string) (*v1alpha1.VirtPlatformConfig, error) {
	return s.client.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
}

func (s clientStatus) UpdateStatus(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*v1alpha1.VirtPlatformConfig, error) {
	return s.client.AdvisorV1alpha1().VirtPlatformConfigs().UpdateStatus(ctx, cfg, metav1.UpdateOptions{})
}

// TestRunWhileLeading runs the controller over started informers: the
// configs in the cache, watch events and CRD events are reconciled by the
// workers, and when the term ends the controller lets go of its watches.
func TestRunWhileLeading(t *testing.T) {
	// The simple clientset: its tracker needs no OpenAPI schema of our types.
	client := fake.NewSimpleClientset(&v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: configName, Generation: 1},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: configName, Action: v1alpha1.PlanActionDryRun},
	})
	factory := externalversions.NewSharedInformerFactory(client, 0)
	informer := factory.Advisor().V1alpha1().VirtPlatformConfigs().Informer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	// The CRDs' metadata, as the API server watches them.
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crdClient := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	crds := metadatainformer.NewSharedInformerFactory(crdClient, 0)
	crdInformer := crds.ForResource(crdGVR).Informer()
	crds.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), crdInformer.HasSynced) {
		t.Fatal("the CRD informer did not sync")
	}

	planner := &fakePlanner{result: deschedulerPlan()}
	watches := &fakeWatches{keys: map[string][]cluster.ObjectKey{}}
	c := New(Config{
		Informer: informer, CRDs: crdInformer, Status: clientStatus{client}, Planner: planner, Watches: watches,
		Cluster: &fakeCluster{objects: nil}, Profiles: catalog.Default(), Recorder: record.NewFakeRecorder(100), Version: thisVersion,
	})
	leading, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(leading, 2)
	}()

	phaseIs := func(want v1alpha1.ConfigPhase) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			cfg, err := client.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, configName, metav1.GetOptions{})
			return err == nil && cfg.Status.Phase == want, nil
		})
		if err != nil {
			t.Fatalf("phase did not become %s: %v", want, err)
		}
	}
	// The config in the cache when the term starts.
	phaseIs(v1alpha1.PhaseReviewRequired)
	if len(watches.watching(configName)) == 0 {
		t.Error("the config's target and inputs are not watched")
	}
	// A watch event on an object the config depends on.
	planner.set(missingPrerequisite())
	if !watches.event(configName, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: machineconfig.WorkerPool}) {
		t.Fatal("the controller set no watch event hook while leading")
	}
	phaseIs(v1alpha1.PhasePrerequisiteFailed)
	// A CRD installed: every config is looked at again.
	planner.set(deschedulerPlan())
	crd := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubedeschedulers.operator.openshift.io"}}
	if _, err := crdClient.Resource(crdGVR).(metadatafake.MetadataClient).CreateFake(crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phaseIs(v1alpha1.PhaseReviewRequired)

	stop()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Run did not return after its context ended")
	}
	if watches.event(configName, cluster.ObjectKey{}) {
		t.Error("the watch event hook is still set after the term ended")
	}
	if keys := watches.watching(configName); len(keys) != 0 {
		t.Errorf("still watching %v after the term ended", keys)
	}
}
