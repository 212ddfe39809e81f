package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/projections"
)

// actions are the state-changing routes. The guard admits only POST with a
// matching Origin and the session's CSRF token to them.
func (s *Server) actions() map[string]http.Handler {
	return map[string]http.Handler{
		"/do/approval/{id}": http.HandlerFunc(s.decideApproval),
		"/do/proposal/{id}": http.HandlerFunc(s.decideProposal),
		"/do/focus":         http.HandlerFunc(s.focus),
		"/do/review/commit": http.HandlerFunc(s.commitReview),
		"/do/tool/{name}":   http.HandlerFunc(s.acceptTool),
		"/do/signout":       http.HandlerFunc(s.signOut),
	}
}

// acceptTool pins the changed descriptor of an upstream tool, bound to the
// hash the page showed: a descriptor that changed again since is refused.
func (s *Server) acceptTool(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	name, hash := r.PathValue("name"), r.PostForm.Get("hash")
	pins, err := projections.Read[projections.Pin](r.Context(), s.opts.Log, projections.Query{View: projections.ViewPins, Limit: 1 << 20})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var pin *projections.Pin
	for i := range pins {
		if pins[i].Name == name {
			pin = &pins[i]
		}
	}
	switch {
	case pin == nil || pin.Pending == "":
		s.reject(w, r, events.CodeNotPending, "no changed descriptor of "+name+" waits: it was accepted already")
		return
	case pin.Pending != hash:
		s.reject(w, r, events.CodeHashChanged, "the tool changed again since the page showed it: reload and look again")
		return
	}
	if _, whole := projections.DescriptorDiff(*pin, s.opts.Descriptors); !whole {
		s.reject(w, r, events.CodeHashChanged, "the new descriptor cannot be shown whole, so it cannot be accepted")
		return
	}
	req := s.opts.Rec.NewID()
	s.opts.Rec.Emit(projections.Acceptance(req, *pin, s.by(r), r.PostForm.Get("reason")))
	if err := s.opts.Rec.Flush(r.Context(), req); err != nil {
		http.Error(w, "the acceptance was not recorded: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	back(w, r, "accepted the new descriptor of "+name)
}

// by names who decides from this request: the person signed in, else
// the machine's own user.
func (s *Server) by(r *http.Request) string {
	if u := s.userOf(r).user; !u.IsZero() {
		return u.Display() + " (ui)"
	}
	return s.opts.Operator + " (ui)"
}

// decideApproval answers a tool call waiting for approval. The form names
// the arguments hash the page showed; a call no longer waiting (decided,
// timed out) or waiting with other arguments is refused.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	r.ParseForm() // the guard parsed it unless the CSRF token came as a header
	id, hash, decision := r.PathValue("id"), r.PostForm.Get("argsHash"), r.PostForm.Get("decision")
	if decision != events.Approve && decision != events.Deny {
		s.reject(w, r, events.CodeInvalidArguments, "decision must be approve or deny")
		return
	}
	pending, err := projections.PendingApprovals(r.Context(), s.opts.Log, s.opts.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var p *projections.Approval
	for i := range pending {
		if pending[i].ID == id {
			p = &pending[i]
		}
	}
	switch {
	case p == nil:
		s.reject(w, r, events.CodeNotPending, "no call waits with approval "+id+": it was decided already or timed out")
		return
	case p.ArgsHash != hash:
		s.reject(w, r, events.CodeHashChanged, "the call waits with other arguments than the page showed: reload and look again")
		return
	}
	decider := s.userOf(r).user
	if decision == events.Approve {
		// Checked here so a refused approval takes no place in the log
		// (which keeps one decision per approval): another approver can
		// still decide. The bridge checks it again.
		if err := p.Rule().Check(p.User, decider); err != nil {
			s.reject(w, r, events.CodeDeciderRefused, err.Error())
			return
		}
	}
	ev := projections.Decision(*p, decision, s.by(r), r.PostForm.Get("reason"), s.opts.Now())
	for kv := decider.AttrsAs(identity.DeciderPrefix); len(kv) > 1; kv = kv[2:] {
		ev.Attrs.Set(kv[0], kv[1])
	}
	s.opts.Rec.Emit(ev)
	if err := s.opts.Rec.Flush(r.Context(), p.RequestID); err != nil {
		http.Error(w, "the decision was not recorded: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	// The log keeps one decision per approval: say whose it kept.
	evs, err := s.opts.Log.ByRequest(r.Context(), p.RequestID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if held, ok := projections.Decided(evs, p.ID); !ok || !projections.Won(held, ev) {
		s.reject(w, r, events.CodeNotPending, "approval "+p.ID+" was decided already ("+held.Attrs.Get(events.AttrDecision)+" by "+held.Attrs.Get(events.AttrBy)+")")
		return
	}
	back(w, r, projections.PastTense(decision)+" "+p.Tool+" ("+p.ID+")")
}

// decideProposal approves (and so applies) or rejects an edit proposal,
// bound to the content hash the page showed.
func (s *Server) decideProposal(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	id, hash, decision := r.PathValue("id"), r.PostForm.Get("contentHash"), r.PostForm.Get("decision")
	if decision != "approve" && decision != "reject" && decision != "skip" {
		s.reject(w, r, events.CodeInvalidArguments, "decision must be approve, reject or skip")
		return
	}
	done, err := s.host.Decide(r.Context(), host.DecideArgs{ID: id, Approve: decision == "approve", Skip: decision == "skip",
		ContentHash: hash, By: s.by(r)})
	var ce *events.Err
	switch {
	case errors.As(err, &ce) && (ce.Code == events.CodeNotPending || ce.Code == events.CodeHashChanged || ce.Code == events.CodeNoProposal):
		s.reject(w, r, ce.Code, ce.Msg)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	msg := id + ": " + done.State
	if decision == "skip" {
		msg += " (decision deferred)"
	}
	if done.Code != "" {
		msg += " (" + string(done.Code) + ": " + done.Message + ")"
	}
	back(w, r, msg)
}

// focus sets the host's active document and selection from the workspace
// view (a JSON body: what get_active_document and get_selection return).
func (s *Server) focus(w http.ResponseWriter, r *http.Request) {
	var f host.Focus
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		s.reject(w, r, events.CodeInvalidArguments, "focus: "+err.Error())
		return
	}
	set, err := s.host.SetFocus(r.Context(), f)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, set)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// back sends a form post back to the approvals page with what happened.
func back(w http.ResponseWriter, r *http.Request, msg string) {
	http.Redirect(w, r, "/approvals?done="+url.QueryEscape(msg), http.StatusSeeOther)
}

// commitReview has the host commit the applied changes with the latest
// review as the commit message.
func (s *Server) commitReview(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	latest, err := s.host.Review(r.Context(), 0)
	if err != nil {
		s.reject(w, r, events.CodeInvalidArguments, "no review to commit with: present one first")
		return
	}
	msg := commitMessage(latest.Content)
	done, err := s.host.Commit(r.Context(), msg)
	if err != nil {
		http.Redirect(w, r, "/reviews?done="+url.QueryEscape("not committed: "+err.Error()), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/reviews?done="+url.QueryEscape(fmt.Sprintf("committed %.12s (%s)", done.Commit, strings.Join(done.Files, ", "))), http.StatusSeeOther)
}
