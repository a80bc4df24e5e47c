package revoke

// The revocation API, on warden's admin listener next to the approval API
// and behind the same checks (admin bearer token, loopback Host):
//
//	GET  /v1/revocations   the revocations in force, newest first
//	POST /v1/revocations   {"kind": "jti"|"sub"|"session", "id": "...",
//	                        "by": "...", "reason": "...",
//	                        "before": RFC 3339 (sub only; default now),
//	                        "for": Go duration (retention; default 24h)}
//
// A revocation must name who made it; the name is kept with it and shown in
// the refusal of every token it covers.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
)

// Request is the body of POST /v1/revocations.
type Request struct {
	Kind   Kind      `json:"kind"`
	ID     string    `json:"id"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Before time.Time `json:"before,omitzero"`
	For    string    `json:"for,omitempty"`
}

// Handler serves the revocation API for reg, to requests with the admin
// token.
func Handler(reg Registry, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/revocations", func(w http.ResponseWriter, r *http.Request) {
		list, err := reg.List(r.Context())
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, apiError{err.Error()})
			return
		}
		if list == nil {
			list = []Revocation{}
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("POST /v1/revocations", func(w http.ResponseWriter, r *http.Request) {
		var body Request
		dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{"body: " + err.Error()})
			return
		}
		rv, err := body.revocation(time.Now())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
			return
		}
		if err := reg.Revoke(r.Context(), rv); err != nil {
			status := http.StatusServiceUnavailable
			if errors.Is(err, ErrInvalid) {
				status = http.StatusBadRequest
			}
			writeJSON(w, status, apiError{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, rv)
	})
	return approval.Guard(token, mux)
}

// revocation turns a request into a revocation made at now.
func (b Request) revocation(now time.Time) (Revocation, error) {
	rv := Revocation{Kind: b.Kind, ID: b.ID, By: strings.TrimSpace(b.By), Reason: b.Reason, Before: b.Before, At: now}
	if rv.By == "" {
		return rv, fmt.Errorf("%w: a revocation must name who makes it (by)", ErrInvalid)
	}
	if !b.Before.IsZero() && b.Kind != KindSubject {
		return rv, fmt.Errorf("%w: before applies to a subject (kind sub) only", ErrInvalid)
	}
	if b.For != "" {
		d, err := time.ParseDuration(b.For)
		if err != nil || d <= 0 {
			return rv, fmt.Errorf("%w: for %q: want a positive duration such as 24h", ErrInvalid, b.For)
		}
		rv.Until = now.Add(d)
	}
	return normalize(rv, now)
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
