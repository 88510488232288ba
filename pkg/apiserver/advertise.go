package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	logger := klog.FromContext(ctx)
	for _, p := range known.Advertised() {
		md := p.Metadata()
		cfg, err := advertisedConfig(md)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.AdvisorV1alpha1().VirtPlatformConfigs().Create(ctx, cfg, metav1.CreateOptions{FieldManager: "virt-advisor-apiserver"})
			switch {
			case err == nil:
				logger.Info("Advertised profile", "profile", md.Name)
				return true, nil
			case apierrors.IsAlreadyExists(err):
				return true, nil
			case notReadyYet(err):
				// Right after the start: nothing to report to anyone.
				logger.V(4).Info("Advertising profile once the server handles requests", "profile", md.Name)
				return false, nil
			default:
				logger.Error(err, "Advertising profile, will retry", "profile", md.Name)
				return false, nil
			}
		})
		if err != nil {
			return fmt.Errorf("advertising profile %s: %w", md.Name, err)
		}
	}
	return nil
}

// notReadyYet is the refusal of a request made before the server's
// admission has its caches (the NamespaceLifecycle plugin answers 403 "not
// yet ready to handle request" until it has synced): no permission is
// missing, and the same request succeeds a moment later.
func notReadyYet(err error) bool {
	return apierrors.IsForbidden(err) && strings.HasSuffix(err.Error(), "not yet ready to handle request")
}

// advertisedConfig is the config advertising a profile. It is created as
// `kubectl create --save-config` would create it: its last-applied
// annotation holds the name and the spec it sets, so that the user's first
// `kubectl apply -f artifacts/samples/…` patches it without a warning and
// without removing the annotations and label that describe the profile
// (they are not in the samples, and not in the last-applied configuration).
func advertisedConfig(md profiles.Metadata) (*v1alpha1.VirtPlatformConfig, error) {
	spec := v1alpha1.VirtPlatformConfigSpec{Profile: md.Name, Action: v1alpha1.PlanActionIgnore}
	applied, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(),
		"kind":       "VirtPlatformConfig",
		"metadata":   map[string]any{"name": md.Name},
		"spec":       spec,
	})
	if err != nil {
		return nil, fmt.Errorf("advertising profile %s: %w", md.Name, err)
	}
	return &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: md.Name,
			Annotations: map[string]string{
				profiles.AutoCreatedAnnotation:     "true",
				profiles.DescriptionAnnotation:     md.Description,
				profiles.ImpactSummaryAnnotation:   md.ImpactSummary,
				corev1.LastAppliedConfigAnnotation: string(applied) + "\n",
			},
			Labels: map[string]string{profiles.CategoryLabel: md.Category},
		},
		Spec: spec,
	}, nil
}
