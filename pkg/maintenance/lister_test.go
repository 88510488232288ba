package maintenance

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

// A window is parsed once per resourceVersion; a changed one is read
// again, and one the arithmetic cannot read is left out.
func TestCacheListerParsesEachRevisionOnce(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	window := func(rv, schedule string) *v1alpha1.MaintenanceWindow {
		return &v1alpha1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: "weekend", ResourceVersion: rv},
			Spec: v1alpha1.MaintenanceWindowSpec{PoolNames: []string{"worker"}, Schedule: schedule, Duration: metav1.Duration{Duration: time.Hour}}}
	}
	l := &CacheLister{Lister: listers.NewMaintenanceWindowLister(indexer)}
	list := func() []*Window {
		t.Helper()
		ws, err := l.Windows(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	if err := indexer.Add(window("1", "0 22 * * 6")); err != nil {
		t.Fatal(err)
	}
	first, again := list(), list()
	if len(first) != 1 || first[0] != again[0] {
		t.Fatalf("the same revision was parsed again: %v, %v", first, again)
	}
	if err := indexer.Update(window("2", "0 20 * * 6")); err != nil {
		t.Fatal(err)
	}
	if changed := list(); len(changed) != 1 || changed[0] == first[0] || changed[0].Schedule.String() != "0 20 * * 6" {
		t.Errorf("a changed window was not read again: %+v", changed)
	}
	if err := indexer.Update(window("3", "not cron")); err != nil {
		t.Fatal(err)
	}
	if bad := list(); len(bad) != 0 {
		t.Errorf("a window that cannot be read is listed: %+v", bad)
	}
}
