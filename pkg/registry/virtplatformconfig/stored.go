package virtplatformconfig

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// storedConfigs reads a stored config and changes it inside its own
// write, in the versioned type the approval and abort logic works on: a
// subresource that decides on the stored config decides on what the write
// replaces, not on an earlier read.
type storedConfigs struct {
	getter  rest.Getter
	updater rest.Updater
	scheme  *runtime.Scheme
}

// get reads the stored config.
func (s storedConfigs) get(ctx context.Context, name string) (*v1alpha1.VirtPlatformConfig, error) {
	current, err := s.getter.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cfg, err := s.versioned(current)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return cfg, nil
}

// change writes what change makes of the stored config; an error from
// change is the answer and nothing is written.
func (s storedConfigs) change(ctx context.Context, name string, change func(latest *v1alpha1.VirtPlatformConfig) error) (runtime.Object, error) {
	update := rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		latest, err := s.versioned(oldObj)
		if err != nil {
			return nil, err
		}
		if err := change(latest); err != nil {
			return nil, err
		}
		updated := &advisor.VirtPlatformConfig{}
		if err := s.scheme.Convert(latest, updated, nil); err != nil {
			return nil, err
		}
		return updated, nil
	})
	stored, _, err := s.updater.Update(ctx, name, update, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return stored, err
}

// versioned converts a stored (internal) config to v1alpha1.
func (s storedConfigs) versioned(obj runtime.Object) (*v1alpha1.VirtPlatformConfig, error) {
	cfg := &v1alpha1.VirtPlatformConfig{}
	if err := s.scheme.Convert(obj, cfg, nil); err != nil {
		return nil, err
	}
	return cfg, nil
}
