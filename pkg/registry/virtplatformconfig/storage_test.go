package virtplatformconfig_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
	"github.com/kubevirt/virt-advisor/pkg/registry/virtplatformconfig"
)

// newStorage returns the storage on a fresh embedded etcd, the same etcd
// the server runs by default.
func newStorage(t *testing.T) *virtplatformconfig.Storage {
	t.Helper()
	etcd, err := embeddedetcd.Start(t.TempDir(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	cfg := storagebackend.NewDefaultConfig("/registry/advisor.kubevirt.io", apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = []string{etcd.ClientURL}
	opts := generic.RESTOptions{
		StorageConfig:  cfg.ForResource(advisor.Resource("virtplatformconfigs")),
		Decorator:      generic.UndecoratedStorage,
		ResourcePrefix: "virtplatformconfigs",
	}
	s, err := virtplatformconfig.NewStorage(apiserver.Scheme, opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Config.Store.DestroyFunc)
	return s
}

func as(name string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name})
}

func config(profile string) *advisor.VirtPlatformConfig {
	return &advisor.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec: advisor.VirtPlatformConfigSpec{
			Profile: profile, Action: advisor.PlanActionDryRun, FailurePolicy: advisor.FailurePolicyAbort,
		},
	}
}

func update(t *testing.T, ctx context.Context, r rest.Updater, obj *advisor.VirtPlatformConfig) *advisor.VirtPlatformConfig {
	t.Helper()
	out, _, err := r.Update(ctx, obj.Name, rest.DefaultUpdatedObjectInfo(obj), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*advisor.VirtPlatformConfig)
}

func TestStrategiesOnEtcd(t *testing.T) {
	s := newStorage(t)

	in := config("example-profile")
	in.Status.Phase = advisor.PhaseCompleted // ignored on create
	obj, err := s.Config.Create(as("alice"), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*advisor.VirtPlatformConfig)
	if created.Generation != 1 || created.Status.SpecChangedBy != "alice" || created.Status.Phase != "" {
		t.Fatalf("create: generation %d, specChangedBy %q, phase %q", created.Generation, created.Status.SpecChangedBy, created.Status.Phase)
	}

	steps := []struct {
		name           string
		ctx            context.Context
		status         bool
		mutate         func(*advisor.VirtPlatformConfig)
		wantGeneration int64
		wantAuthor     string
		check          func(*testing.T, *advisor.VirtPlatformConfig)
	}{
		{"label change is not a spec change", as("bob"), false,
			func(c *advisor.VirtPlatformConfig) { c.Labels = map[string]string{"a": "b"} }, 1, "alice", nil},
		{"spec change bumps generation and records the author", as("bob"), false,
			func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionIgnore }, 2, "bob", nil},
		{"status through the main resource is ignored", as("carol"), false,
			func(c *advisor.VirtPlatformConfig) { c.Status.Phase = advisor.PhaseFailed }, 2, "bob",
			func(t *testing.T, c *advisor.VirtPlatformConfig) {
				if c.Status.Phase != "" {
					t.Errorf("phase %q written through the main resource", c.Status.Phase)
				}
			}},
		{"status writers change status only", as("controller"), true,
			func(c *advisor.VirtPlatformConfig) {
				c.Status.Phase = advisor.PhaseDrafting
				c.Spec.Action = advisor.PlanActionApply
				c.Labels = map[string]string{"x": "y"}
				c.Status.SpecChangedBy = "mallory"
				c.Status.Approval = &advisor.ApprovalRecord{PlanHash: "forged"}
			}, 2, "bob",
			func(t *testing.T, c *advisor.VirtPlatformConfig) {
				if c.Status.Phase != advisor.PhaseDrafting {
					t.Errorf("phase %q, want Drafting", c.Status.Phase)
				}
				if c.Spec.Action != advisor.PlanActionIgnore || c.Labels["a"] != "b" || c.Labels["x"] != "" {
					t.Errorf("status update changed spec or labels: %+v %v", c.Spec, c.Labels)
				}
				if c.Status.Approval != nil {
					t.Errorf("approval forged through /status: %+v", c.Status.Approval)
				}
			}},
	}
	current := created
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			next := current.DeepCopy()
			step.mutate(next)
			var r rest.Updater = s.Config
			if step.status {
				r = s.Status
			}
			got := update(t, step.ctx, r, next)
			if got.Generation != step.wantGeneration {
				t.Errorf("generation %d, want %d", got.Generation, step.wantGeneration)
			}
			if got.Status.SpecChangedBy != step.wantAuthor {
				t.Errorf("specChangedBy %q, want %q", got.Status.SpecChangedBy, step.wantAuthor)
			}
			if step.check != nil {
				step.check(t, got)
			}
			current = got
		})
	}
}

func TestProfileIsImmutableOnEtcd(t *testing.T) {
	s := newStorage(t)
	obj, err := s.Config.Create(as("alice"), config("example-profile"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := obj.(*advisor.VirtPlatformConfig)
	c.Spec.Profile = "virt-higher-density"
	_, _, err = s.Config.Update(as("alice"), c.Name, rest.DefaultUpdatedObjectInfo(c), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err == nil {
		t.Fatal("profile change accepted")
	}
}
