package approvalpolicy

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// The author is recorded from the request that sets the spec, with the
// groups and extra the controller reviews before every approval; a body's
// status is never taken, and a change of labels keeps the author.
func TestStrategyRecordsTheAuthor(t *testing.T) {
	as := func(name string, groups ...string) context.Context {
		return request.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups,
			Extra: map[string][]string{"scopes": {"approve"}}})
	}
	forged := advisor.ApprovalPolicyStatus{Author: "mallory", AuthorGroups: []string{"system:masters"}}
	p := &advisor.ApprovalPolicy{Spec: advisor.ApprovalPolicySpec{Configs: advisor.PolicyConfigs{Names: []string{"a"}}}, Status: forged}
	strategy{}.PrepareForCreate(as("alice", "approvers", "system:authenticated"), p)
	want := advisor.ApprovalPolicyStatus{Author: "alice", AuthorGroups: []string{"approvers", "system:authenticated"},
		AuthorExtra: map[string][]string{"scopes": {"approve"}}}
	if !reflect.DeepEqual(p.Status, want) {
		t.Fatalf("created: status %+v, want %+v", p.Status, want)
	}

	labelsOnly := p.DeepCopy()
	labelsOnly.Labels, labelsOnly.Status = map[string]string{"team": "b"}, forged
	strategy{}.PrepareForUpdate(as("bob", "editors"), labelsOnly, p)
	if !reflect.DeepEqual(labelsOnly.Status, want) {
		t.Fatalf("labels changed: status %+v, want the author kept: %+v", labelsOnly.Status, want)
	}

	specChanged := p.DeepCopy()
	specChanged.Spec.Configs.Names, specChanged.Status = []string{"b"}, forged
	strategy{}.PrepareForUpdate(as("bob", "editors"), specChanged, p)
	if want := (advisor.ApprovalPolicyStatus{Author: "bob", AuthorGroups: []string{"editors"}, AuthorExtra: map[string][]string{"scopes": {"approve"}}}); !reflect.DeepEqual(specChanged.Status, want) {
		t.Fatalf("spec changed: status %+v, want %+v", specChanged.Status, want)
	}
}
