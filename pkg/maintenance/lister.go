package maintenance

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

// Lister lists the maintenance windows; ctx's logger (the reconcile's
// or the request's) says what it leaves out.
type Lister interface {
	Windows(ctx context.Context) ([]*Window, error)
}

// CacheLister lists the windows of an informer's cache. A stored window
// the arithmetic cannot read (validation refuses those) is left out and
// logged. Each window is parsed once per resourceVersion: the controller
// asks for every pool on every reconcile.
type CacheLister struct {
	Lister listers.MaintenanceWindowLister

	parsed sync.Map // name -> parsedWindow
}

type parsedWindow struct {
	resourceVersion string
	window          *Window
	err             error
}

// Windows implements Lister.
func (l *CacheLister) Windows(ctx context.Context) ([]*Window, error) {
	list, err := l.Lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*Window, 0, len(list))
	for _, mw := range list {
		w, err := l.parse(mw)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Ignoring a MaintenanceWindow that cannot be read", "window", mw.Name)
			continue
		}
		out = append(out, w)
	}
	return out, nil
}

// parse reads a window, or returns the window read from the same
// resourceVersion before.
func (l *CacheLister) parse(mw *v1alpha1.MaintenanceWindow) (*Window, error) {
	if p, ok := l.parsed.Load(mw.Name); ok && p.(parsedWindow).resourceVersion == mw.ResourceVersion {
		return p.(parsedWindow).window, p.(parsedWindow).err
	}
	w, err := FromAPI(mw)
	l.parsed.Store(mw.Name, parsedWindow{resourceVersion: mw.ResourceVersion, window: w, err: err})
	return w, err
}
