package a2agw

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// ListTasks under the task-owner stage. The agent lists the tasks of every
// client of the gateway (it sees only warden), so with Options.Authenticate
// warden lists them itself and answers with the caller's own:
//
//	client P: ListTasks{filters, pageSize, pageToken}
//	   │  pageToken: "" or one warden sealed for P and these filters, else refused
//	   ▼
//	warden ──ListTasks{filters, pageSize:100, pageToken:A₀…}──► agent   (≤ maxListPages pages)
//	       ◄── {tasks, nextPageToken:A₁…}   each answer checked; P's tasks kept,
//	   │                                      in the agent's order, each id once
//	   ▼
//	client ◄── {tasks: own[off:off+size], totalSize: len(own), pageSize: size,
//	            nextPageToken: seal(P, filters, off+size), or "" at the end}
//
// The agent's page tokens and totals never reach the client: they would
// tell another client's tasks apart (a2a-go's token is a task id) or count
// them. warden pages over the filtered list instead, with tokens of its own
// that are bound to the principal, the upstream, the method and every
// other member of the request (filters, historyLength, ...), and that do
// not survive a restart (the key is made at the first list).

// listPageDefault and listPageMax are the page sizes of A2A 1.0: 50 when
// pageSize is absent or 0, at most 100.
const (
	listPageDefault = 50
	listPageMax     = 100
)

// maxListPages bounds the agent's pages read for one ListTasks (of
// listPageMax tasks each): a longer list is refused, not cut short, so
// that totalSize is never wrong.
const maxListPages = 20

// listQuery is a client's ListTasks, read by the task-owner stage.
type listQuery struct {
	size, offset int
	filters      []byte // the params' members but pageSize and pageToken, as a JSON object's contents
}

// readList reads the paging of a ListTasks request of principal: the page
// size, and the offset its pageToken, which must be warden's, stands for.
func (h *Handler) readList(principal, method string, params []byte) (*listQuery, *deny.Denial) {
	q := &listQuery{size: listPageDefault}
	var token, bad string
	jsonrpc.Members(params, func(name string, raw []byte) {
		switch name {
		case "pageSize":
			n, err := strconv.Atoi(string(raw))
			switch {
			case err != nil || n < 0 || n > listPageMax:
				bad = "params.pageSize must be an integer from 1 to " + strconv.Itoa(listPageMax)
			case n > 0:
				q.size = n
			}
		case "pageToken":
			s, ok := jsonrpc.String(raw)
			if !ok {
				bad = "params.pageToken must be a string"
			}
			token = s
		default:
			if paging := pagingName(name); paging != "" {
				// The agent's decoder (Go's encoding/json) may take
				// "PageToken" for pageToken: a client must not slip a
				// page token of the agent's past warden's.
				bad = "params." + name + " is a case variant of " + paging
				return
			}
			if len(q.filters) > 0 {
				q.filters = append(q.filters, ',')
			}
			q.filters = append(q.filters, jsonrpc.Quote(name)...)
			q.filters = append(q.filters, ':')
			q.filters = append(q.filters, raw...)
		}
	})
	if bad == "" && token != "" {
		off, ok := h.openPage(token, principal, method, q.filters)
		if !ok {
			bad = "params.pageToken was not issued by this gateway to this client for this request (tokens do not survive a restart)"
		}
		q.offset = off
	}
	if bad != "" {
		return nil, &deny.Denial{Stage: StageOwner, Rule: deny.RuleTaskOwner, Reason: bad}
	}
	return q, nil
}

// pagingName returns the paging member that name is a case variant of,
// or "".
func pagingName(name string) string { return foldsTo(name, []string{"pageSize", "pageToken"}) }

// upstreamParams are the params of warden's own ListTasks to the agent:
// the client's filters, the largest page, and the agent's token.
func (q *listQuery) upstreamParams(token string) []byte {
	b := append([]byte{'{'}, q.filters...)
	if len(q.filters) > 0 {
		b = append(b, ',')
	}
	b = append(b, `"pageSize":`...)
	b = strconv.AppendInt(b, listPageMax, 10)
	if token != "" {
		b = append(b, `,"pageToken":`...)
		b = append(b, jsonrpc.Quote(token)...)
	}
	return append(b, '}')
}

// request is warden's ListTasks to the agent for the client's msg, decoded
// strictly as any message is (jsonrpc.NewRequest would panic on a member
// that folds into pageSize or pageToken, were one to pass readList).
func (q *listQuery) request(msg *jsonrpc.Message, token string, lim jsonrpc.Limits) (*jsonrpc.Message, error) {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), msg.ID.Raw()...)
	b = append(b, `,"method":`...)
	b = append(b, jsonrpc.Quote(msg.Method)...)
	b = append(b, `,"params":`...)
	b = append(b, q.upstreamParams(token)...)
	return jsonrpc.Decode(append(b, '}'), lim)
}

// pageKey returns the key that seals warden's page tokens, made at the
// first use; it is safe for concurrent use.
func (h *Handler) pageKey() []byte {
	h.listOnce.Do(func() { _, _ = rand.Read(h.listKey[:]) })
	return h.listKey[:]
}

// pageMAC binds offset to everything a token is valid for.
func (h *Handler) pageMAC(offset uint64, principal, method string, filters []byte) []byte {
	m := hmac.New(sha256.New, h.pageKey())
	for _, s := range []string{"warden a2a ListTasks page", principal, h.opts.Name, method} {
		_, _ = io.WriteString(m, strconv.Itoa(len(s))+":"+s)
	}
	_, _ = m.Write(binary.AppendUvarint(nil, uint64(len(filters))))
	_, _ = m.Write(filters)
	_, _ = m.Write(binary.AppendUvarint(nil, offset))
	return m.Sum(nil)[:16]
}

// sealPage returns the page token that stands for offset.
func (h *Handler) sealPage(offset int, principal, method string, filters []byte) string {
	b := binary.AppendUvarint(nil, uint64(offset))
	b = append(b, h.pageMAC(uint64(offset), principal, method, filters)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// openPage returns the offset token stands for, if warden sealed it for
// principal, method and filters.
func (h *Handler) openPage(token, principal, method string, filters []byte) (int, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return 0, false
	}
	off, n := binary.Uvarint(b)
	// One encoding per offset: a longer varint for the same offset is not
	// the token warden issued.
	if n <= 0 || len(b) != n+16 || off > maxListPages*listPageMax || n != len(binary.AppendUvarint(nil, off)) {
		return 0, false
	}
	if !hmac.Equal(b[n:], h.pageMAC(off, principal, method, filters)) {
		return 0, false
	}
	return int(off), true
}

// listFilter keeps principal's tasks from the agent's pages.
type listFilter struct {
	principal string
	owners    *owners
	from, to  int             // the client's page: the indices of principal's tasks it shows
	seen      map[string]bool // task ids met on earlier pages
	owned     int             // principal's tasks met so far, in the agent's order
	shown     [][]byte        // those of them in [from, to), copied: no agent page stays in memory
	withheld  int             // entries that are not principal's
}

// page reads one ListTasks result of the agent: it keeps each task whose id
// an answer to principal named, once, unless its context is another
// client's. It returns the agent's next page token; ok is false when
// result is not a list of tasks.
func (f *listFilter) page(result []byte) (next string, ok bool) {
	tasks, found := jsonrpc.Lookup(result, "tasks")
	if !found {
		return "", false
	}
	if raw, found := jsonrpc.Lookup(result, "nextPageToken"); found {
		if next, ok = jsonrpc.String(raw); !ok {
			return "", false
		}
	}
	return next, jsonrpc.Elements(tasks, func(task []byte) {
		id, _ := jsonrpc.String(lookup(task, "id"))
		ctxID, hasCtx := jsonrpc.String(lookup(task, "contextId"))
		p, mine := f.owners.of("t:" + id)
		mine = mine && p == f.principal && id != "" && !f.seen[id]
		if hasCtx && mine {
			if p, ok := f.owners.of("c:" + ctxID); ok && p != f.principal {
				mine = false
			}
		}
		if id != "" {
			f.seen[id] = true
		}
		if !mine {
			f.withheld++
			return
		}
		if f.owned >= f.from && f.owned < f.to {
			f.shown = append(f.shown, bytes.Clone(task))
		}
		f.owned++
	})
}

// lookup is jsonrpc.Lookup without the found flag (nil when absent).
func lookup(v []byte, name string) []byte {
	raw, _ := jsonrpc.Lookup(v, name)
	return raw
}

// result is the answer to the client: its page of its own tasks.
func (f *listFilter) result(h *Handler, q *listQuery, method string) []byte {
	next := ""
	if f.to < f.owned {
		next = h.sealPage(f.to, f.principal, method, q.filters)
	}
	b := []byte(`{"tasks":[`)
	for i, t := range f.shown {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	b = append(b, `],"totalSize":`...)
	b = strconv.AppendInt(b, int64(f.owned), 10)
	b = append(b, `,"pageSize":`...)
	b = strconv.AppendInt(b, int64(q.size), 10)
	b = append(b, `,"nextPageToken":`...)
	b = append(b, jsonrpc.Quote(next)...)
	return append(b, '}')
}

// listTasks answers a ListTasks of the task-owner stage (c.list is set):
// it reads the agent's list page by page and answers with the client's
// page of its own tasks. The record of the answer says how many of the
// agent's entries were withheld, not which.
func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	fail := func(d *deny.Denial) {
		e := Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: c.msg.Method, ID: c.msg.ID,
			Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason}
		if err := h.record(ctx, e); err != nil {
			d = auditDenial(err)
		}
		writeError(w, http.StatusOK, c.msg.ID, d)
	}
	answer := func(ans *jsonrpc.Message, withheld int, reason string) {
		e := Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: c.msg.Method, ID: c.msg.ID,
			Decision: "allow", Reason: reason, Withheld: withheld, Raw: ans.Raw}
		if err := h.record(ctx, e); err != nil {
			writeError(w, http.StatusOK, c.msg.ID, auditDenial(err))
			return
		}
		h.observe(ctx, c, ans)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ans.Raw)
	}
	f := &listFilter{principal: c.principal, owners: &h.owned, from: c.list.offset, to: c.list.offset + c.list.size, seen: map[string]bool{}}
	tokens := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		if pages == maxListPages {
			fail(&deny.Denial{Stage: StageOwner, Rule: deny.RuleTaskOwner, Reason: "the agent lists more than " +
				strconv.Itoa(maxListPages*listPageMax) + " tasks for this request, more than warden filters: narrow it (contextId, status, statusTimestampAfter)"})
			return
		}
		req, err := c.list.request(c.msg, token, h.opts.Limits)
		if err != nil { // not expected: readList refused what could collide
			fail(&deny.Denial{Stage: StageOwner, Rule: deny.RuleTaskOwner, Reason: "the listing could not be asked of the agent: " + err.Error()})
			return
		}
		ans, d := h.exchange(ctx, r, req)
		if d != nil {
			fail(d)
			return
		}
		switch {
		case ans.Result == nil && pages == 0: // the agent refused the client's filters: its error goes back as it is
			answer(ans, 0, "")
			return
		case ans.Result == nil: // it refused warden's own page token, which the error may quote
			fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleInvalid, Code: jsonrpc.CodeUpstreamInvalid,
				Reason: "the upstream agent refused to list page " + strconv.Itoa(pages+1) + " of its own " + c.msg.Method})
			return
		}
		next, ok := f.page(ans.Result)
		if !ok {
			fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleInvalid, Code: jsonrpc.CodeUpstreamInvalid,
				Reason: "the upstream agent's " + c.msg.Method + " answer is not a list of tasks"})
			return
		}
		if next == "" {
			break
		}
		if tokens[next] {
			fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleInvalid, Code: jsonrpc.CodeUpstreamInvalid,
				Reason: "the upstream agent's " + c.msg.Method + " pages loop: a page token came back"})
			return
		}
		tokens[next], token = true, next
	}
	out := jsonrpc.NewResult(c.msg.ID, f.result(h, c.list, c.msg.Method))
	answer(out, f.withheld, "filtered by task owner: "+strconv.Itoa(f.withheld)+" of the agent's entries withheld")
}

// exchange sends one request of warden's to the upstream and returns its
// checked answer, which must not be a stream.
func (h *Handler) exchange(ctx context.Context, r *http.Request, msg *jsonrpc.Message) (*jsonrpc.Message, *deny.Denial) {
	req, err := h.upstreamRequest(ctx, r, msg.Raw, "application/json")
	if err != nil {
		return nil, &deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Code: jsonrpc.CodeUpstreamUnavailable, Reason: err.Error()}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, &deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Code: jsonrpc.CodeUpstreamUnavailable,
			Reason: "the upstream agent could not be reached"}
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return nil, &deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnexpectedStream, Code: jsonrpc.CodeUpstreamInvalid,
			Reason: "the upstream agent answered " + msg.Method + " with a stream"}
	}
	maxBytes, _ := h.limits()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
	if err != nil {
		return nil, &deny.Denial{Stage: StageUpstream, Rule: deny.RuleEnded, Code: jsonrpc.CodeUpstreamUnavailable,
			Reason: "the upstream agent's answer was cut short"}
	}
	return h.checkAnswer(data, msg.ID, resp.Status)
}

// upstreamRequest is a POST of body to the upstream, with the client's
// forwarded headers and Options.UpstreamHeader.
func (h *Handler) upstreamRequest(ctx context.Context, r *http.Request, body []byte, accept string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.opts.Upstream, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	for _, k := range forwardHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
	for k, v := range h.opts.UpstreamHeader {
		req.Header[k] = v
	}
	return req, nil
}

// listState is the Handler's part of ListTasks: the key of its page
// tokens, made at the first use.
type listState struct {
	listOnce sync.Once
	listKey  [32]byte
}
