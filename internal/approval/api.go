package approval

// The admin API for approvals, served on warden's admin listener (loopback
// by default), never on the MCP listener:
//
//	GET  /v1/approvals            the pending calls, oldest first
//	GET  /v1/approvals/{id}       one pending call
//	POST /v1/approvals/{id}/allow {"approver": "...", "reason": "..."}
//	                              202 {"approvals": n, "needed": m} when the call
//	                              needs more approvers (Options.Approvers)
//	POST /v1/approvals/{id}/deny  {"approver": "...", "reason": "..."}
//	     /v1/revocations...         the revocation API, when the queue has one
//	                                (Options.Revocations, internal/revoke)
//
// Every request needs "Authorization: Bearer <admin token>" (the token file
// the gateway creates in its data dir, mode 0600), and a Host that is a
// loopback name. A decision must name its approver; the name is recorded
// with the call.

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// View is a pending call as the API shows it.
type View struct {
	ID             string          `json:"id"`
	Upstream       string          `json:"upstream"`
	Session        string          `json:"session,omitempty"`
	Subject        string          `json:"subject"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	ParametersHash string          `json:"parameters_hash"`
	Created        time.Time       `json:"created"`
	Expires        time.Time       `json:"expires"`
}

func view(p Pending) View {
	return View{ID: p.ID, Upstream: p.Upstream, Session: p.Session, Subject: p.Subject, Tool: p.Tool,
		Arguments: p.Arguments, ParametersHash: p.Hash, Created: p.Created, Expires: p.Expires}
}

// Handler serves the admin API for q. token is the admin bearer token.
func Handler(q *Queue, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		list, err := q.ListContext(r.Context())
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, apiError{err.Error()})
			return
		}
		out := make([]View, len(list))
		for i, p := range list {
			out[i] = view(p)
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /v1/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := q.Get(r.PathValue("id"))
		if !ok {
			writeJSON(w, http.StatusNotFound, apiError{"no pending call " + r.PathValue("id")})
			return
		}
		writeJSON(w, http.StatusOK, view(p))
	})
	decide := func(approve bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Approver string `json:"approver"`
				Reason   string `json:"reason"`
			}
			dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				writeJSON(w, http.StatusBadRequest, apiError{"body: " + err.Error()})
				return
			}
			var more *MoreApprovals
			switch err := q.Decide(r.PathValue("id"), approve, strings.TrimSpace(body.Approver), body.Reason); {
			case errors.As(err, &more):
				writeJSON(w, http.StatusAccepted, map[string]any{"id": r.PathValue("id"), "approved": false, "approver": body.Approver,
					"approvals": len(more.Votes), "needed": more.Need, "message": more.Error()})
			case errors.Is(err, ErrSameApprover):
				writeJSON(w, http.StatusConflict, apiError{err.Error()})
			case errors.Is(err, ErrUnknown):
				writeJSON(w, http.StatusNotFound, apiError{"no pending call " + r.PathValue("id") + " (decided, timed out or cancelled)"})
			case errors.Is(err, ErrApprover), errors.Is(err, ErrHash):
				writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
			case err != nil:
				writeJSON(w, http.StatusServiceUnavailable, apiError{err.Error()})
			default:
				writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "approved": approve, "approver": body.Approver})
			}
		}
	}
	mux.HandleFunc("POST /v1/approvals/{id}/allow", decide(true))
	mux.HandleFunc("POST /v1/approvals/{id}/deny", decide(false))
	if q.revocations != nil {
		rh := q.revocations(token)
		mux.Handle("/v1/revocations", rh)
		mux.Handle("/v1/revocations/", rh)
	}
	return Guard(token, mux)
}

// Guard serves h to requests that carry the admin token and a loopback Host
// (against DNS rebinding), and refuses every other request: the checks of
// every admin API.
func Guard(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err != nil || !loopbackName(host) {
			writeJSON(w, http.StatusForbidden, apiError{"host not allowed: the admin API answers loopback names only"})
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden-admin"`)
			writeJSON(w, http.StatusUnauthorized, apiError{"the admin token is missing or wrong"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func loopbackName(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// Compact and without HTML escaping, so that arguments appear as the
	// exact canonical bytes their parameters_hash covers.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
