// Package fleethub is the controller of a fleet's hub: it writes each
// FleetConfig's ManifestWorkReplicaSet (the config every cluster gets,
// and once approved the delegated approval, rolled out by the fleet's
// strategy) and follows the clusters' progress into the FleetConfig's
// status (docs/fleet.md).
package fleethub

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

// Storage reads a FleetConfig from storage and changes its status in its
// own write (fleetconfig.Stored).
type Storage interface {
	Get(ctx context.Context, namespace, name string) (*v1alpha1.FleetConfig, error)
	Change(ctx context.Context, namespace, name string, change func(latest *v1alpha1.FleetConfig) error) (*v1alpha1.FleetConfig, error)
}

// FieldManager is the manager of the ManifestWorkReplicaSets the hub writes.
const FieldManager = "virt-advisor-fleet"

// ManagedByLabel marks the ManifestWorkReplicaSets the hub writes: only
// those are deleted with their FleetConfig.
const ManagedByLabel = "advisor.kubevirt.io/fleetconfig"

// Controller reconciles FleetConfigs on the hub.
type Controller struct {
	fleets   cache.SharedIndexInformer
	lister   listers.FleetConfigLister
	hub      dynamic.Interface
	reader   *fleet.Reader
	status   Storage
	queue    workqueue.TypedRateLimitingInterface[string]
	works    dynamicinformer.DynamicSharedInformerFactory
	decision dynamicinformer.DynamicSharedInformerFactory
}

// New returns the hub's controller over the FleetConfig informer; it
// watches the fleets' ManifestWorks and the PlacementDecisions itself.
func New(fleets cache.SharedIndexInformer, reader *fleet.Reader, status Storage) *Controller {
	c := &Controller{
		fleets: fleets,
		lister: listers.NewFleetConfigLister(fleets.GetIndexer()),
		hub:    reader.Hub,
		reader: reader,
		status: status,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fleetconfigs"}),
		works: dynamicinformer.NewFilteredDynamicSharedInformerFactory(reader.Hub, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.LabelSelector = fleet.ReplicaSetLabel
		}),
		decision: dynamicinformer.NewDynamicSharedInformerFactory(reader.Hub, 0),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, _ = fleets.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue})
	// A ManifestWork names its fleet in its ManifestWorkReplicaSet's
	// label, namespace.name (a namespace has no dot).
	byWork := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if ns, name, ok := strings.Cut(u.GetLabels()[fleet.ReplicaSetLabel], "."); ok {
				c.queue.Add(ns + "/" + name)
			}
		}
	}
	_, _ = c.works.ForResource(fleet.ManifestWorkGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: byWork, UpdateFunc: func(_, o any) { byWork(o) }, DeleteFunc: byWork})
	// A decision names its Placement: every fleet of it is looked at again.
	byDecision := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		all, _ := c.lister.FleetConfigs(u.GetNamespace()).List(labels.Everything())
		for _, fc := range all {
			if fc.Spec.PlacementRef.Name == u.GetLabels()[fleet.PlacementLabel] {
				c.queue.Add(fc.Namespace + "/" + fc.Name)
			}
		}
	}
	_, _ = c.decision.ForResource(fleet.PlacementDecisionGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: byDecision, UpdateFunc: func(_, o any) { byDecision(o) }, DeleteFunc: byDecision})
	return c
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.works.Start(ctx.Done())
	c.decision.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.fleets.HasSynced) {
		return
	}
	c.works.WaitForCacheSync(ctx.Done())
	c.decision.WaitForCacheSync(ctx.Done())
	go wait.UntilWithContext(ctx, c.work, time.Second)
	<-ctx.Done()
}

func (c *Controller) work(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Reconciling a FleetConfig failed; retrying", "fleetconfig", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// reconcile writes the FleetConfig's ManifestWorkReplicaSet and its
// status, or deletes the ManifestWorkReplicaSet of a deleted one.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	// What reaches the clusters is written from storage, not from the
	// cache: a cache behind an abort (another replica's, or this one's
	// for a moment) would send them again the approval the abort ended.
	fc, err := c.status.Get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return c.deleteReplicaSet(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	if err := c.apply(ctx, fc); err != nil {
		// Said in the status, not only in the log: nothing reaches the
		// clusters until it is written.
		msg := fmt.Sprintf("The ManifestWorkReplicaSet %s/%s cannot be written, so no cluster gets this spec: %v", ns, name, err)
		if fc.Status.Message != msg {
			_, _ = c.status.Change(ctx, ns, name, func(latest *v1alpha1.FleetConfig) error {
				latest.Status.Message = msg
				return nil
			})
		}
		return err
	}
	return c.writeStatus(ctx, key, fc)
}

// writeStatus writes fc's status as its clusters report it, unless an
// approval or an abort landed since fc was read (then fc is looked at
// again).
func (c *Controller) writeStatus(ctx context.Context, key string, fc *v1alpha1.FleetConfig) error {
	ns, name := fc.Namespace, fc.Name
	decisions, err := c.reader.Decisions(ctx, fc)
	if err != nil {
		return err
	}
	reports, err := c.reader.Reports(ctx, fc)
	if err != nil {
		return err
	}
	phase, message, clusters := fleet.Progress(fc, decisions, reports)
	st := fc.Status
	if st.Phase == phase && st.Message == message && st.ObservedGeneration == fc.Generation && apiequality.Semantic.DeepEqual(st.Clusters, clusters) {
		return nil
	}
	_, err = c.status.Change(ctx, ns, name, func(latest *v1alpha1.FleetConfig) error {
		if latest.Generation != fc.Generation || !apiequality.Semantic.DeepEqual(latest.Status.Approval, fc.Status.Approval) ||
			!apiequality.Semantic.DeepEqual(latest.Status.Abort, fc.Status.Abort) {
			return errStale // an approval or abort landed meanwhile: look again
		}
		latest.Status.Phase, latest.Status.Message, latest.Status.Clusters = phase, message, clusters
		latest.Status.ObservedGeneration = fc.Generation
		return nil
	})
	if err == errStale {
		c.queue.Add(key)
		return nil
	}
	return err
}

var errStale = fmt.Errorf("the FleetConfig changed while its status was computed")

// apply writes fc's ManifestWorkReplicaSet as it should be now.
func (c *Controller) apply(ctx context.Context, fc *v1alpha1.FleetConfig) error {
	mwrs, err := fleet.ReplicaSet(fc, fleet.SpokeConfig(fc, c.reader.Defaults), fleet.Strategy(fc))
	if err != nil {
		return err
	}
	mwrs.SetLabels(map[string]string{ManagedByLabel: fc.Name})
	data, err := mwrs.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = c.hub.Resource(fleet.ManifestWorkReplicaSetGVR).Namespace(fc.Namespace).Patch(ctx, fc.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("writing ManifestWorkReplicaSet %s/%s: %w", fc.Namespace, fc.Name, err)
	}
	return nil
}

// deleteReplicaSet deletes the ManifestWorkReplicaSet of a deleted
// FleetConfig, when it is ours: OCM then deletes its ManifestWorks, and
// the clusters' configs with them.
func (c *Controller) deleteReplicaSet(ctx context.Context, ns, name string) error {
	mwrs, err := c.hub.Resource(fleet.ManifestWorkReplicaSetGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if mwrs.GetLabels()[ManagedByLabel] != name {
		return nil
	}
	uid := mwrs.GetUID()
	err = c.hub.Resource(fleet.ManifestWorkReplicaSetGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
