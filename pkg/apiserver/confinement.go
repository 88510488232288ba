package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/artifacts/deploy"
	"github.com/kubevirt/virt-advisor/pkg/confinement"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
)

// confinementCheck is the readyz check's name.
const confinementCheck = "virt-advisor-admission-policies"

// guard checks, from informers on the main cluster's admission policies
// and bindings, that those the server is built with are in force before
// the controller writes what they confine (controller.Confinement); it
// reports them on /readyz/virt-advisor-admission-policies and in the
// metric virt_advisor_admission_policy_in_force.
type guard struct {
	shipped *confinement.Shipped
	cluster confinement.Cluster
	mapper  meta.RESTMapper
	// informers tell the controller of changes.
	informers []cache.SharedInformer
	factory   informers.SharedInformerFactory

	mu sync.Mutex
	// said is what was last logged, so that a change is logged once.
	said string
	// logger is that of the context Start runs under.
	logger klog.Logger
}

// newGuard builds the guard over the shipped manifest; Start starts its
// informers.
func newGuard(kube kubernetes.Interface, mapper meta.RESTMapper) (*guard, error) {
	shipped, err := confinement.Parse(deploy.AdmissionPolicies)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	policies := factory.Admissionregistration().V1().ValidatingAdmissionPolicies()
	bindings := factory.Admissionregistration().V1().ValidatingAdmissionPolicyBindings()
	g := &guard{shipped: shipped, mapper: mapper, factory: factory,
		informers: []cache.SharedInformer{policies.Informer(), bindings.Informer()}}
	g.cluster = confinement.Cluster{Policies: policies.Lister(), Bindings: bindings.Lister(),
		Synced: func() bool { return policies.Informer().HasSynced() && bindings.Informer().HasSynced() }}
	for _, informer := range g.informers {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(interface{}) { g.report() },
			UpdateFunc: func(interface{}, interface{}) { g.report() },
			DeleteFunc: func(interface{}) { g.report() },
		}); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Start starts the informers until ctx ends, and reports every shipped
// object once they have listed (with none installed, no event would).
func (g *guard) Start(ctx context.Context) {
	g.mu.Lock()
	g.logger = klog.FromContext(ctx)
	g.mu.Unlock()
	stop := ctx.Done()
	g.factory.Start(stop)
	go func() {
		if cache.WaitForCacheSync(stop, g.informers[0].HasSynced, g.informers[1].HasSynced) {
			g.report()
		}
	}()
}

// Writable is nil when the shipped policies that confine writes of gvk
// are in force.
func (g *guard) Writable(gvk schema.GroupVersionKind) error {
	mapping, err := g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("virt-advisor writes no %s while it cannot tell which admission policy confines it: %w", gvk.Kind, err)
	}
	return g.shipped.Writable(g.cluster, mapping.Resource.GroupResource())
}

// Name is the readyz check's name.
func (g *guard) Name() string { return confinementCheck }

// Check fails while a shipped policy or binding is not in force, naming
// every one that is not.
func (g *guard) Check(*http.Request) error {
	if problems := g.shipped.Check(g.cluster, schema.GroupResource{}); len(problems) > 0 {
		return errors.New(say(problems))
	}
	return nil
}

// report sets the metric of every shipped object and logs a change, once
// the informers have listed (before, everything would read as missing).
func (g *guard) report() {
	if !g.cluster.Synced() {
		return
	}
	problems := g.shipped.Check(g.cluster, schema.GroupResource{})
	wrong := map[confinement.Object]bool{}
	for _, p := range problems {
		wrong[p.Object] = true
	}
	for _, o := range g.shipped.Objects() {
		metrics.AdmissionPolicyInForce(o.Kind, o.Name, !wrong[o])
	}
	said := say(problems)
	g.mu.Lock()
	defer g.mu.Unlock()
	if said == g.said {
		return
	}
	g.said = said
	if said == "" {
		g.logger.Info("The admission policies that confine the server's writes are in force")
		return
	}
	g.logger.Info("Writing nothing the admission policies confine until they are in force", "problems", said)
}

func say(problems []confinement.Problem) string {
	what := make([]string, len(problems))
	for i, p := range problems {
		what[i] = p.String()
	}
	return strings.Join(what, "; ")
}
