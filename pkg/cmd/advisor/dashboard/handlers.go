package dashboard

import (
	"bytes"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
)

func (s *Server) refreshMillis() int64 { return s.refresh.Milliseconds() }

func (s *Server) configsPage(w http.ResponseWriter, r *http.Request) {
	v, code := s.buildConfigs(r.Context())
	s.render(w, code, "configs", page{Title: "VirtPlatformConfigs", Nav: "configs", Refresh: s.refreshMillis(), Data: v})
}

func (s *Server) planPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, code := s.buildPlan(r.Context(), name)
	s.render(w, code, "plan", page{Title: "Plan of " + name, Nav: name, Refresh: s.refreshMillis(), Data: v})
}

// summaryPart is the plan page's live header: cheap to poll, unlike the
// plan itself, which is a computation with dry-runs on the cluster.
func (s *Server) summaryPart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v := planView{Name: name}
	cfg, err := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(r.Context(), name, metav1.GetOptions{})
	code := http.StatusOK
	if err != nil {
		v.Err, code = explain.Line(err), codeOf(err)
	} else {
		v.Summary = newSummary(cfg, s.clock.Now())
	}
	var buf bytes.Buffer
	if err := s.pages["plan"].ExecuteTemplate(&buf, "summary", v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

func (s *Server) rolloutPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, code := s.buildRollout(r.Context(), name, r.URL.Query().Get("approved"), r.URL.Query().Get("aborted"))
	s.render(w, code, "rollout", page{Title: "Rollout of " + name, Nav: name, Refresh: s.refreshMillis(), Data: v})
}

// confirmView is the question before an approval.
type confirmView struct {
	Name, Hash string
	Summary    summaryView
	Bound      boundSettings
	Err        string
}

// approve asks for a confirmation first, then POSTs exactly the hash the
// form carries, and shows the server's answer: a 201 leads to the rollout,
// a 409 to the new plan, a 403 to the missing permission.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	hash := r.PostForm.Get("planHash")
	if hash == "" {
		v, code := s.buildPlan(ctx, name)
		if code == http.StatusOK {
			code = http.StatusBadRequest
		}
		v.Banner = &banner{Tone: "bad", Title: "Nothing was approved: the form named no plan hash.", Hint: "Use the approve button of the plan you reviewed."}
		s.render(w, code, "plan", page{Title: "Plan of " + name, Nav: name, Data: v})
		return
	}
	configs := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	if r.PostForm.Get("confirm") != "yes" {
		v := confirmView{Name: name, Hash: hash}
		code := http.StatusOK
		if cfg, err := configs.Get(ctx, name, metav1.GetOptions{}); err != nil {
			v.Err, code = explain.Line(err), codeOf(err)
		} else {
			v.Summary, v.Bound = newSummary(cfg, s.clock.Now()), newBoundSettings(cfg)
		}
		s.render(w, code, "confirm", page{Title: "Approve plan " + v1alpha1.ShortHash(hash) + "?", Nav: name, Data: v})
		return
	}

	_, err := configs.Approve(ctx, name, &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ApprovalSpec{PlanHash: hash},
	}, metav1.CreateOptions{})
	if err == nil {
		http.Redirect(w, r, "/configs/"+url.PathEscape(name)+"/rollout?approved="+url.QueryEscape(hash), http.StatusSeeOther)
		return
	}
	b := &banner{Tone: "bad", Detail: explain.Line(err)}
	switch {
	case apierrors.IsConflict(err):
		b.Title = "The plan changed since you loaded it: nothing was approved."
		b.Hint = "The plan below is the live one now. Review it; approve it if you agree."
	case apierrors.IsForbidden(err):
		b.Title = "The server refused your approval (403 Forbidden): nothing was approved."
	default:
		b.Title = "The approval failed: nothing was approved."
	}
	v, _ := s.buildPlan(ctx, name)
	v.Banner = b
	s.render(w, codeOf(err), "plan", page{Title: "Plan of " + name, Nav: name, Data: v})
}

// abortConfirmView is the question before an abort.
type abortConfirmView struct {
	Name, Hash, ApprovedBy string
	Summary                summaryView
	Err                    string
}

// abort asks for a confirmation first, then POSTs the abort of exactly the
// approved plan the form names, and shows the server's answer on the
// rollout page.
func (s *Server) abort(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	hash := r.PostForm.Get("planHash")
	configs := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	if hash == "" || r.PostForm.Get("confirm") != "yes" {
		v := abortConfirmView{Name: name, Hash: hash}
		code := http.StatusOK
		if cfg, err := configs.Get(ctx, name, metav1.GetOptions{}); err != nil {
			v.Err, code = explain.Line(err), codeOf(err)
		} else {
			v.Summary = newSummary(cfg, s.clock.Now())
			if a := cfg.Status.Approval; a != nil {
				v.ApprovedBy = a.ApprovedBy
				if v.Hash == "" {
					v.Hash = a.PlanHash
				}
			}
		}
		s.render(w, code, "abort", page{Title: "Abort plan " + v1alpha1.ShortHash(v.Hash) + "?", Nav: name, Data: v})
		return
	}
	_, err := configs.Abort(ctx, name, &v1alpha1.Abort{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.AbortSpec{PlanHash: hash},
	}, metav1.CreateOptions{})
	if err == nil {
		http.Redirect(w, r, "/configs/"+url.PathEscape(name)+"/rollout?aborted="+url.QueryEscape(hash), http.StatusSeeOther)
		return
	}
	b := &banner{Tone: "bad", Detail: explain.Line(err)}
	switch {
	case apierrors.IsConflict(err):
		b.Title = "The server took no abort: nothing was aborted."
		b.Hint = "The plan you meant is no longer the one being applied; the page below shows where the config is now."
	case apierrors.IsForbidden(err):
		b.Title = "The server refused your abort (403 Forbidden): nothing was aborted."
	default:
		b.Title = "The abort failed: nothing was aborted."
	}
	v, _ := s.buildRollout(ctx, name, "", "")
	v.Banner = b
	s.render(w, codeOf(err), "rollout", page{Title: "Rollout of " + name, Nav: name, Data: v})
}
