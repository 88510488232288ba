package apiserver

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

// advertiseProfiles creates a VirtPlatformConfig with action Ignore for
// every advertised profile that has none, so users discover them with
// `kubectl get vpc`. Existing configs are never modified.
func advertiseProfiles(ctx context.Context, client versioned.Interface, known *catalog.Catalog) error {
	for _, p := range known.Advertised() {
		md := p.Metadata()
		cfg := &v1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name: md.Name,
				Annotations: map[string]string{
					profiles.AutoCreatedAnnotation:   "true",
					profiles.DescriptionAnnotation:   md.Description,
					profiles.ImpactSummaryAnnotation: md.ImpactSummary,
				},
				Labels: map[string]string{profiles.CategoryLabel: md.Category},
			},
			Spec: v1alpha1.VirtPlatformConfigSpec{Profile: md.Name, Action: v1alpha1.PlanActionIgnore},
		}
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.AdvisorV1alpha1().VirtPlatformConfigs().Create(ctx, cfg, metav1.CreateOptions{FieldManager: "virt-advisor-apiserver"})
			switch {
			case err == nil:
				klog.InfoS("Advertised profile", "profile", md.Name)
				return true, nil
			case apierrors.IsAlreadyExists(err):
				return true, nil
			default:
				klog.ErrorS(err, "Advertising profile, will retry", "profile", md.Name)
				return false, nil
			}
		})
		if err != nil {
			return fmt.Errorf("advertising profile %s: %w", md.Name, err)
		}
	}
	return nil
}
