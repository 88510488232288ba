package maintenance

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

// Lister lists the maintenance windows.
type Lister interface {
	Windows() ([]*Window, error)
}

// CacheLister lists the windows of an informer's cache. A stored window
// the arithmetic cannot read (validation refuses those) is left out and
// logged.
type CacheLister struct {
	Lister listers.MaintenanceWindowLister
}

// Windows implements Lister.
func (l CacheLister) Windows() ([]*Window, error) {
	list, err := l.Lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*Window, 0, len(list))
	for _, mw := range list {
		w, err := FromAPI(mw)
		if err != nil {
			klog.ErrorS(err, "Ignoring a MaintenanceWindow that cannot be read", "window", mw.Name)
			continue
		}
		out = append(out, w)
	}
	return out, nil
}
