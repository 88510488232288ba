package virtplatformconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

const (
	liveHash  = "1111111111111111111111111111111111111111111111111111111111111111"
	staleHash = "2222222222222222222222222222222222222222222222222222222222222222"
	cfgName   = "example-profile"
	cfgUID    = types.UID("3f1b0a4e-0000-4000-8000-000000000001")
)

func versioned(mutate ...func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
	c := &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: cfgName, UID: cfgUID, Generation: 3, ResourceVersion: "7"},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: cfgName, Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyAbort},
		Status:     v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseReviewRequired, SpecChangedBy: "bob"},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func withPhase(p v1alpha1.ConfigPhase) func(*v1alpha1.VirtPlatformConfig) {
	return func(c *v1alpha1.VirtPlatformConfig) { c.Status.Phase = p }
}

// waitingForWindow: a plan approved into a closed maintenance window.
func waitingForWindow(c *v1alpha1.VirtPlatformConfig) {
	c.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: strings.Repeat("1", 64), ApprovedBy: "bob", Generation: c.Generation}
	c.Status.Items = []v1alpha1.VirtPlatformConfigItem{{Name: "x", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStatePending}}
	status.MarkWaiting(&c.Status, c.Generation, status.Wait{Reason: status.WaitingMaintenanceWindow,
		Message: "Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'x'"})
}

func withAction(a v1alpha1.PlanAction) func(*v1alpha1.VirtPlatformConfig) {
	return func(c *v1alpha1.VirtPlatformConfig) { c.Spec.Action = a }
}

// code is the HTTP status of err; 0 for nil.
func code(t *testing.T, err error) int32 {
	t.Helper()
	if err == nil {
		return 0
	}
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		t.Fatalf("%v is not an API status error", err)
	}
	return s.Status().Code
}

func checkRefusal(t *testing.T, err error, wantCode int32, wantMsg string) {
	t.Helper()
	if got := code(t, err); got != wantCode {
		t.Fatalf("code %d (%v), want %d", got, err, wantCode)
	}
	if wantCode != 0 && !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("message %q does not say %q", err.Error(), wantMsg)
	}
}

func TestAdmissionOfAConfig(t *testing.T) {
	tests := []struct {
		name     string
		cfg      *v1alpha1.VirtPlatformConfig
		user     string
		distinct bool
		wantCode int32
		wantMsg  string
	}{
		{name: "reviewed plan", cfg: versioned(), user: "alice"},
		{name: "not yet reconciled", cfg: versioned(withPhase("")), user: "alice"},
		{name: "drafting", cfg: versioned(withPhase(v1alpha1.PhaseDrafting)), user: "alice"},
		{name: "completed", cfg: versioned(withPhase(v1alpha1.PhaseCompleted)), user: "alice"},
		{name: "drifted", cfg: versioned(withPhase(v1alpha1.PhaseDrifted)), user: "alice"},
		{name: "failed", cfg: versioned(withPhase(v1alpha1.PhaseFailed)), user: "alice"},
		{name: "action Ignore", cfg: versioned(withAction(v1alpha1.PlanActionIgnore)), user: "alice",
			wantCode: 409, wantMsg: "spec.action is Ignore"},
		{name: "a plan is being applied", cfg: versioned(withPhase(v1alpha1.PhaseInProgress)), user: "alice",
			wantCode: 409, wantMsg: "a plan is being applied (phase InProgress)"},
		{name: "prerequisites missing", cfg: versioned(withPhase(v1alpha1.PhasePrerequisiteFailed)), user: "alice",
			wantCode: 409, wantMsg: "phase is PrerequisiteFailed"},
		{name: "an approved plan waits for a maintenance window", cfg: versioned(waitingForWindow), user: "alice",
			wantCode: 409, wantMsg: "plan 111111111111 approved by bob is waiting (MaintenanceWindow: Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'x'); nothing of it is written yet, and it is applied when the wait ends. To apply another plan instead, change the spec"},
		{name: "a phase this server does not know", cfg: versioned(withPhase("Sleeping")), user: "alice", wantCode: 409},
		{name: "the author approves, one pair of eyes", cfg: versioned(), user: "bob"},
		{name: "the author approves, four eyes", cfg: versioned(), user: "bob", distinct: true,
			wantCode: 403, wantMsg: `user "bob" made the last spec change`},
		{name: "another user approves, four eyes", cfg: versioned(), user: "alice", distinct: true},
		{name: "Ignore is refused before four eyes", cfg: versioned(withAction(v1alpha1.PlanActionIgnore)), user: "bob", distinct: true,
			wantCode: 409, wantMsg: "Ignore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := admission{requireDistinctApprover: tt.distinct}.config(tt.cfg, tt.user)
			checkRefusal(t, err, tt.wantCode, tt.wantMsg)
		})
	}
}

func TestAdmissionOfTheWrite(t *testing.T) {
	tests := []struct {
		name     string
		latest   *v1alpha1.VirtPlatformConfig
		distinct bool
		wantCode int32
		wantMsg  string
	}{
		{name: "unchanged", latest: versioned()},
		{name: "status moved on, still approvable", latest: versioned(withPhase(v1alpha1.PhaseCompleted))},
		{name: "deleted and created again", latest: versioned(func(c *v1alpha1.VirtPlatformConfig) { c.UID = "another" }),
			wantCode: 409, wantMsg: "deleted and created again"},
		{name: "deleted and created again, generation brought back", latest: versioned(func(c *v1alpha1.VirtPlatformConfig) {
			c.UID, c.Status.Phase = "another", v1alpha1.PhaseInProgress
		}), wantCode: 409, wantMsg: "deleted and created again"},
		{name: "spec changed", latest: versioned(func(c *v1alpha1.VirtPlatformConfig) { c.Generation = 4 }),
			wantCode: 409, wantMsg: "the spec changed while the plan was being approved"},
		{name: "another approval won", latest: versioned(withPhase(v1alpha1.PhaseInProgress)),
			wantCode: 409, wantMsg: "phase InProgress"},
		{name: "four eyes against the stored author", latest: versioned(func(c *v1alpha1.VirtPlatformConfig) { c.Status.SpecChangedBy = "alice" }),
			distinct: true, wantCode: 403, wantMsg: "--require-distinct-approver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := admission{requireDistinctApprover: tt.distinct}.write(versioned(), tt.latest, "alice", false)
			checkRefusal(t, err, tt.wantCode, tt.wantMsg)
		})
	}
}

func livePlan(mutate ...func(*plan.Result)) *plan.Result {
	res := &plan.Result{
		Status: v1alpha1.PlanStatus{
			Profile: cfgName, Generation: 3, PlanHash: liveHash, ImpactSeverity: v1alpha1.ImpactLow,
			Prerequisites: []v1alpha1.Prerequisite{{Kind: "KubeDescheduler", APIVersion: "operator.openshift.io/v1", Description: "install it", Satisfied: true}},
			Items: []v1alpha1.PlanItem{{
				Name:      "example-config",
				TargetRef: v1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "example"},
				Operation: v1alpha1.OperationCreate, ImpactSeverity: v1alpha1.ImpactLow, Message: "creates the example",
			}},
		},
		SnapshotHash: "snapshot",
		Targets:      map[string]v1alpha1.ReviewedTarget{},
	}
	for _, m := range mutate {
		m(res)
	}
	return res
}

func TestAdmitPlan(t *testing.T) {
	tests := []struct {
		name     string
		live     *plan.Result
		reviewed string
		wantCode int32
		wantMsg  string
	}{
		{name: "the plan reviewed", live: livePlan(), reviewed: liveHash},
		{name: "another plan", live: livePlan(), reviewed: staleHash,
			wantCode: 409, wantMsg: "you approved plan " + staleHash + " but the live plan is now " + liveHash},
		{name: "a prerequisite went missing", live: livePlan(func(r *plan.Result) {
			r.Status.Prerequisites[0].Satisfied, r.Status.Items = false, nil
		}), reviewed: liveHash, wantCode: 409, wantMsg: "the plan cannot be approved: Missing required dependencies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRefusal(t, admitPlan(cfgName, tt.live, tt.reviewed), tt.wantCode, tt.wantMsg)
		})
	}
}

// fakePlanner returns a given plan or error and counts its computations.
type fakePlanner struct {
	res *plan.Result
	err error
	// revert is the revert plan; reverts counts its computations.
	revert    *plan.Result
	revertErr error
	reverts   int
	mu        sync.Mutex
	// computed counts the computations.
	computed int
}

func (p *fakePlanner) ComputeLive(context.Context, *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.computed++
	return p.res, p.err
}

func (p *fakePlanner) ComputeRevertLive(context.Context, *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reverts++
	if p.revertErr != nil {
		return nil, p.revertErr
	}
	return p.revert, p.err
}

// memStore holds one config in memory and writes it with the approve
// subresource's strategy, as the etcd store does.
type memStore struct {
	mu  sync.Mutex
	obj *advisor.VirtPlatformConfig
	// meanwhile changes the stored config between the handler's read and
	// its write, as a concurrent request would.
	meanwhile func(*advisor.VirtPlatformConfig)
	writes    int
}

var (
	_ rest.Getter  = &memStore{}
	_ rest.Updater = &memStore{}
)

func (s *memStore) New() runtime.Object { return &advisor.VirtPlatformConfig{} }

func (s *memStore) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obj == nil || s.obj.Name != name {
		return nil, apierrors.NewNotFound(configsResource, name)
	}
	return s.obj.DeepCopy(), nil
}

func (s *memStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obj == nil || s.obj.Name != name {
		return nil, false, apierrors.NewNotFound(configsResource, name)
	}
	if s.meanwhile != nil {
		s.meanwhile(s.obj)
	}
	old := s.obj.DeepCopy()
	obj, err := objInfo.UpdatedObject(ctx, old.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	updated := obj.(*advisor.VirtPlatformConfig)
	approvalStrategy{}.PrepareForUpdate(ctx, updated, old)
	if errs := (approvalStrategy{}).ValidateUpdate(ctx, updated, old); len(errs) > 0 {
		return nil, false, apierrors.NewInvalid(advisor.Kind("VirtPlatformConfig"), name, errs)
	}
	s.obj = updated
	s.writes++
	return updated.DeepCopy(), false, nil
}

// planReaders may get virtplatformconfigs/plan; nobody else may.
func planReaders(names ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, n := range names {
			if a.GetUser().GetName() == n && a.GetVerb() == "get" && a.GetResource() == "virtplatformconfigs" && a.GetSubresource() == "plan" && a.GetName() == cfgName {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func asUser(name string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name})
}

func approvalOf(hash string) *advisor.Approval {
	return &advisor.Approval{Spec: advisor.ApprovalSpec{PlanHash: hash}}
}

// TestApproveCreate covers every refusal of POST .../approve and its
// success, with a fake planner and an in-memory store: what is computed,
// what is recorded, what the caller is told.
func TestApproveCreate(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)

	tests := []struct {
		name string
		user string
		// body is the request body (default: an approval of liveHash).
		body     runtime.Object
		stored   *v1alpha1.VirtPlatformConfig // default: versioned()
		noConfig bool
		distinct bool
		live     *plan.Result // default: livePlan()
		planErr  error
		dryRun   bool
		// meanwhile changes the stored config while the plan is computed.
		meanwhile func(*advisor.VirtPlatformConfig)

		wantCode     int32
		wantMsg      string
		wantComputed bool
		wantRecorded bool
	}{
		{name: "approved", user: "alice", wantComputed: true, wantRecorded: true},
		{name: "approved by the author without four eyes", user: "bob", wantComputed: true, wantRecorded: true},

		{name: "no permission to read the plan", user: "mallory",
			wantCode: 403, wantMsg: `user "mallory" may not get virtplatformconfigs/plan: approving a plan takes reviewing it`},
		{name: "not an Approval", user: "alice", body: &advisor.VirtPlatformConfig{},
			wantCode: 400, wantMsg: "expected an Approval"},
		{name: "another config named in the body", user: "alice",
			body:     &advisor.Approval{ObjectMeta: metav1.ObjectMeta{Name: "virt-higher-density"}, Spec: advisor.ApprovalSpec{PlanHash: liveHash}},
			wantCode: 400, wantMsg: `must equal the VirtPlatformConfig name "example-profile"`},
		{name: "no plan hash", user: "alice", body: approvalOf(""),
			wantCode: 422, wantMsg: "spec.planHash"},
		{name: "no such config", user: "alice", noConfig: true,
			wantCode: 404, wantMsg: "not found"},
		{name: "action Ignore", user: "alice", stored: versioned(withAction(v1alpha1.PlanActionIgnore)),
			wantCode: 409, wantMsg: "spec.action is Ignore"},
		{name: "a plan is being applied", user: "alice", stored: versioned(withPhase(v1alpha1.PhaseInProgress)),
			wantCode: 409, wantMsg: "phase InProgress"},
		{name: "prerequisites missing", user: "alice", stored: versioned(withPhase(v1alpha1.PhasePrerequisiteFailed)),
			wantCode: 409, wantMsg: "PrerequisiteFailed"},
		{name: "four eyes", user: "bob", distinct: true,
			wantCode: 403, wantMsg: "--require-distinct-approver"},
		{name: "every plan slot taken", user: "alice", planErr: &BusyError{Limit: 8, Waited: 5 * time.Second},
			wantCode: 429, wantMsg: "retry in 1s", wantComputed: true},
		{name: "main cluster unreachable", user: "alice", planErr: fmt.Errorf("connection refused"),
			wantCode: 503, wantMsg: "check that the main cluster is reachable", wantComputed: true},
		{name: "a prerequisite went missing since the review", user: "alice",
			live:     livePlan(func(r *plan.Result) { r.Status.Prerequisites[0].Satisfied, r.Status.Items = false, nil }),
			wantCode: 409, wantMsg: "the plan cannot be approved", wantComputed: true},
		{name: "stale plan hash", user: "alice", body: approvalOf(staleHash),
			wantCode: 409, wantMsg: "you approved plan " + staleHash + " but the live plan is now " + liveHash, wantComputed: true},
		{name: "dry run", user: "alice", dryRun: true, wantComputed: true},
		{name: "the spec changed while computing", user: "alice",
			meanwhile: func(c *advisor.VirtPlatformConfig) { c.Generation++ },
			wantCode:  409, wantMsg: "the spec changed while the plan was being approved", wantComputed: true},
		{name: "deleted and created again while computing", user: "alice",
			meanwhile: func(c *advisor.VirtPlatformConfig) { c.UID = "another" },
			wantCode:  409, wantMsg: "deleted and created again", wantComputed: true},
		{name: "another approval won while computing", user: "alice",
			meanwhile: func(c *advisor.VirtPlatformConfig) { c.Status.Phase = advisor.PhaseInProgress },
			wantCode:  409, wantMsg: "phase InProgress", wantComputed: true},
		{name: "set to Ignore while computing", user: "alice",
			meanwhile: func(c *advisor.VirtPlatformConfig) { c.Spec.Action = advisor.PlanActionIgnore },
			wantCode:  409, wantMsg: "spec.action is Ignore", wantComputed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{meanwhile: tt.meanwhile}
			if !tt.noConfig {
				stored := tt.stored
				if stored == nil {
					stored = versioned()
				}
				store.obj = &advisor.VirtPlatformConfig{}
				if err := scheme.Convert(stored, store.obj, nil); err != nil {
					t.Fatal(err)
				}
			}
			before := store.obj.DeepCopy()
			planner := &fakePlanner{res: tt.live, err: tt.planErr}
			if planner.res == nil {
				planner.res = livePlan()
			}
			recorder := record.NewFakeRecorder(10)
			r := &ApproveREST{stored: storedConfigs{getter: store, updater: store, scheme: scheme}, planner: planner, recorder: recorder,
				authz: planReaders("alice", "bob"), admission: admission{requireDistinctApprover: tt.distinct}}
			body := tt.body
			if body == nil {
				body = approvalOf(liveHash)
			}
			opts := &metav1.CreateOptions{}
			if tt.dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}

			out, err := r.Create(asUser(tt.user), cfgName, body, rest.ValidateAllObjectFunc, opts)

			checkRefusal(t, err, tt.wantCode, tt.wantMsg)
			if computed := planner.computed > 0; computed != tt.wantComputed {
				t.Errorf("plan computed: %v, want %v", computed, tt.wantComputed)
			}
			if err != nil && strings.Contains(err.Error(), liveHash) && !strings.Contains(tt.wantMsg, liveHash) {
				t.Errorf("the refusal %q names the live plan hash", err.Error())
			}
			events := drain(recorder)
			if !tt.wantRecorded {
				if store.writes != 0 || (store.obj != nil && store.obj.Status.Approval != nil) {
					t.Errorf("an approval was recorded: %+v", store.obj.Status.Approval)
				}
				if len(events) != 0 {
					t.Errorf("events %q for an approval not recorded", events)
				}
				if tt.meanwhile == nil && before != nil && store.obj.Status.Phase != before.Status.Phase {
					t.Errorf("phase %s, want %s unchanged", store.obj.Status.Phase, before.Status.Phase)
				}
			}
			if err != nil {
				return
			}
			got := out.(*advisor.Approval)
			if got.Name != cfgName || got.Status.ApprovedBy != tt.user || got.Status.PlanHash != liveHash || got.Status.ApprovedAt == nil {
				t.Errorf("response %+v", got)
			}
			if !tt.wantRecorded {
				return
			}
			a := store.obj.Status.Approval
			if a == nil || a.PlanHash != liveHash || a.ApprovedBy != tt.user || a.Generation != 3 || a.UID != cfgUID || a.ItemsHash == "" {
				t.Fatalf("recorded approval %+v", a)
			}
			if store.obj.Status.Phase != advisor.PhaseInProgress || len(store.obj.Status.Items) != 1 || store.obj.Status.ObservedGeneration != 3 {
				t.Errorf("phase %s, %d items, observed generation %d: the approved plan was not handed to the controller",
					store.obj.Status.Phase, len(store.obj.Status.Items), store.obj.Status.ObservedGeneration)
			}
			wantEvents := []string{"Normal Approved Plan " + liveHash + " approved by " + tt.user, "Normal InProgress Applying plan 111111111111 approved by " + tt.user}
			if strings.Join(events, "\n") != strings.Join(wantEvents, "\n") {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(wantEvents, "\n"))
			}
		})
	}
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
