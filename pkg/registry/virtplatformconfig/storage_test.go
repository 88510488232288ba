package virtplatformconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/registry/virtplatformconfig"
)

// approvers is an authorizer that lets the named users approve (and read
// plans), and nobody anything else of interest here.
func approvers(names ...string) authorizer.Authorizer {
	allowed := map[string]bool{}
	for _, n := range names {
		allowed[n] = true
	}
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == workAgent && a.GetResource() == "virtplatformconfigs" && a.GetSubresource() == "delegatedapproval" && a.GetVerb() == "create" {
			return authorizer.DecisionAllow, "", nil
		}
		if allowed[a.GetUser().GetName()] && a.GetResource() == "virtplatformconfigs" &&
			((a.GetSubresource() == "approve" && a.GetVerb() == "create") || (a.GetSubresource() == "plan" && a.GetVerb() == "get")) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

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
	s, err := virtplatformconfig.NewStorage(apiserver.Scheme, opts, virtplatformconfig.Options{Authorizer: approvers("alice", "dave"), Profiles: catalog.Default().Validation()})
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
		mutate         func(*advisor.VirtPlatformConfig)
		wantGeneration int64
		wantAuthor     string
		check          func(*testing.T, *advisor.VirtPlatformConfig)
	}{
		{"label change is not a spec change", as("bob"),
			func(c *advisor.VirtPlatformConfig) { c.Labels = map[string]string{"a": "b"} }, 1, "alice", nil},
		{"spec change bumps generation and records the author", as("bob"),
			func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionIgnore }, 2, "bob", nil},
		{"status through the main resource is ignored", as("carol"),
			func(c *advisor.VirtPlatformConfig) { c.Status.Phase = advisor.PhaseFailed }, 2, "bob",
			func(t *testing.T, c *advisor.VirtPlatformConfig) {
				if c.Status.Phase != "" {
					t.Errorf("phase %q written through the main resource", c.Status.Phase)
				}
			}},
	}
	current := created
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			next := current.DeepCopy()
			step.mutate(next)
			got := update(t, step.ctx, s.Config, next)
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

func TestActionApplyNeedsTheApprovePermission(t *testing.T) {
	s := newStorage(t)
	withApply := config("example-profile")
	withApply.Spec.Action = advisor.PlanActionApply
	_, err := s.Config.Create(as("bob"), withApply, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create with Apply by a non-approver: %v, want 403", err)
	}
	obj, err := s.Config.Create(as("bob"), config("example-profile"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := obj.(*advisor.VirtPlatformConfig)

	steps := []struct {
		name    string
		user    string
		mutate  func(*advisor.VirtPlatformConfig)
		allowed bool
	}{
		{"an editor sets Apply", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionApply }, false},
		{"an approver sets Apply", "alice", func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionApply }, true},
		{"an editor changes another field while Apply stands", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.BypassOptimisticLock = true }, false},
		{"an editor changes labels only while Apply stands", "bob", func(c *advisor.VirtPlatformConfig) { c.Labels = map[string]string{"team": "virt"} }, true},
		{"an editor sets DryRun", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionDryRun }, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			next := cfg.DeepCopy()
			step.mutate(next)
			out, _, err := s.Config.Update(as(step.user), next.Name, rest.DefaultUpdatedObjectInfo(next), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			if !step.allowed {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("got %v, want 403", err)
				}
				if msg := err.Error(); !strings.Contains(msg, "create virtplatformconfigs/approve") || !strings.Contains(msg, "/approve") {
					t.Errorf("message %q does not name the permission and what to do", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg = out.(*advisor.VirtPlatformConfig)
		})
	}
}

// workAgent is the only user approvers lets set a delegated approval.
const workAgent = "system:serviceaccount:open-cluster-management-agent:klusterlet-agent-sa"

// Only the fleet's work agent may set or change a delegated approval,
// which approves plans; doing so is no spec change (the plan it
// approves was hashed at this generation); removing it takes nothing.
func TestDelegatedApprovalNeedsItsPermission(t *testing.T) {
	s := newStorage(t)
	delegated := func() *advisor.DelegatedApproval {
		return &advisor.DelegatedApproval{Fleet: "virt-fleet/la", FleetHash: strings.Repeat("f", 64), ApprovedBy: "alice", ApprovedAt: metav1.Now(),
			Clusters: []advisor.ClusterPlanHash{{Name: "spoke-a", PlanHash: strings.Repeat("a", 64)}}}
	}
	withDelegated := config("example-profile")
	withDelegated.Spec.DelegatedApproval = delegated()
	if _, err := s.Config.Create(as("alice"), withDelegated, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create with a delegated approval by an approver of the cluster: %v, want 403", err)
	}
	obj, err := s.Config.Create(as(workAgent), config("example-profile"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := obj.(*advisor.VirtPlatformConfig)
	steps := []struct {
		name    string
		user    string
		mutate  func(*advisor.VirtPlatformConfig)
		allowed bool
	}{
		{"an editor forges one", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.DelegatedApproval = delegated() }, false},
		{"an approver of this cluster forges one", "alice", func(c *advisor.VirtPlatformConfig) { c.Spec.DelegatedApproval = delegated() }, false},
		{"the work agent delivers one", workAgent, func(c *advisor.VirtPlatformConfig) { c.Spec.DelegatedApproval = delegated() }, true},
		{"an editor changes its hash", "bob", func(c *advisor.VirtPlatformConfig) {
			c.Spec.DelegatedApproval.Clusters[0].PlanHash = strings.Repeat("b", 64)
		}, false},
		{"an editor changes another field and leaves it", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.WaitTimeout = "1h" }, true},
		{"an editor removes it", "bob", func(c *advisor.VirtPlatformConfig) { c.Spec.DelegatedApproval = nil }, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			next := cfg.DeepCopy()
			step.mutate(next)
			out, _, err := s.Config.Update(as(step.user), next.Name, rest.DefaultUpdatedObjectInfo(next), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			if !step.allowed {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "create virtplatformconfigs/delegatedapproval") {
					t.Fatalf("got %v, want 403 naming the permission", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*advisor.VirtPlatformConfig)
			specChange := step.name == "an editor changes another field and leaves it"
			if (got.Generation != cfg.Generation) != specChange {
				t.Errorf("generation %d → %d: only a change of another field is a spec change", cfg.Generation, got.Generation)
			}
			cfg = got
		})
	}
}

func TestStatusIsTheControllers(t *testing.T) {
	s := newStorage(t)
	obj, err := s.Config.Create(as("bob"), config("example-profile"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*advisor.VirtPlatformConfig)

	// Over HTTP nobody writes status, a cluster admin included.
	forged := created.DeepCopy()
	forged.Status.Phase = advisor.PhaseInProgress
	for _, ctx := range []context.Context{as("mallory"), genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})} {
		_, _, err := s.Status.Update(ctx, forged.Name, rest.DefaultUpdatedObjectInfo(forged), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("status update: %v, want 403", err)
		}
	}

	// The controller writes status only, approval included.
	in := &v1alpha1.VirtPlatformConfig{}
	if err := apiserver.Scheme.Convert(created, in, nil); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	in.Status.Phase = v1alpha1.PhaseInProgress
	in.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: "abc", ApprovedBy: "alice", ApprovedAt: now, Generation: 1, ItemsHash: "def"}
	in.Status.SpecChangedBy = "mallory"
	in.Spec.Action = v1alpha1.PlanActionApply
	in.Status.Items = []v1alpha1.VirtPlatformConfigItem{{Name: "one", State: v1alpha1.ItemStatePending, LastTransitionTime: &now}}
	got, err := s.StatusWriter.UpdateStatus(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseInProgress || got.Status.Approval == nil || got.Status.Approval.ItemsHash != "def" {
		t.Errorf("controller status write lost: %+v", got.Status)
	}
	if got.Spec.Action != v1alpha1.PlanActionDryRun || got.Status.SpecChangedBy != "bob" {
		t.Errorf("status write changed spec or its author: %+v, %q", got.Spec, got.Status.SpecChangedBy)
	}

	// What the controller stores is validated too: an item without its
	// transition time is refused, never stored for a later nil dereference.
	got.Status.Items[0].LastTransitionTime = nil
	if _, err := s.StatusWriter.UpdateStatus(context.Background(), got); !apierrors.IsInvalid(err) {
		t.Fatalf("item without lastTransitionTime: %v, want 422", err)
	}
	// A stale write is a conflict, not a lost update.
	stale := got.DeepCopy()
	stale.ResourceVersion = in.ResourceVersion
	stale.Status.Items[0].LastTransitionTime = &now
	if _, err := s.StatusWriter.UpdateStatus(context.Background(), stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale status write: %v, want 409", err)
	}
}
