//go:build integration

package difftest

// The oracle: what the upstream read and ran (its oracle file), against
// warden's audit log, the tokens the test issued, and what the corpus
// entry asks of warden. Each check can fail:
//
//	(i)   every handler run matches an audit record of a tools/call warden
//	      forwarded for that message, of the same tool with the same
//	      parameters_hash (SHA-256 of the JCS form of the arguments the
//	      handler received)
//	(ii)  transfer_funds never ran but with a valid token, sent in that
//	      message, for exactly what the handler did (source, amount,
//	      destination as its SDK bound them), and consumed by warden (its jti
//	      in the message's audit records), each token once; and read_file,
//	      which the tool policy denies, never ran
//	(iii) no upstream read a member of warden's io.agentwarden/ namespace, in
//	      any case, in params._meta (under any spelling of params and _meta a
//	      lenient reader accepts), and no handler got one in its _meta
//	(iv)  every request (anything with an id, or that is not even JSON) was
//	      answered: silence is a failure, not a refusal
//	(v)   an entry the specification has warden refuse reached no upstream
//	      and got warden's error; an entry it has warden forward reached the
//	      upstream, got a result, and ran its tool (the positive controls)
//	(vi)  an entry that states the arguments its token approved (Exec) and
//	      reached the upstream put exactly those bytes, the approved
//	      arguments in RFC 8785 form, in the params.arguments of every
//	      tools/call the upstream read: a spelling that shares the approved
//	      hash (0.10000000000000001 for 0.1, an escaped character) reaches
//	      no tool, which might read it another way than JCS does
//
// (iii) is about the carrier warden reads its token from. A token a client
// puts in its tool's arguments, or deeper inside a _meta value, is that
// tool's data, which warden neither reads nor rewrites; the corpus sends such
// messages to check that warden does not honour them (ii), not to have
// warden hide them.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/audit"
)

// violation is one failed check on one entry.
type violation struct {
	check string // "i" .. "v"
	entry string
	text  string
}

// verdict collects the violations of one run.
type verdict struct {
	upstream string
	found    []violation
}

func (v *verdict) add(check string, o *outcome, format string, args ...any) {
	v.found = append(v.found, violation{check, o.entry.Name, fmt.Sprintf(format, args...)})
}

// check runs the oracle over the run and reports every violation.
func (r *run) check(t *testing.T) {
	r.attribute(readAudit(t, r.g.audit))
	v := &verdict{upstream: r.upstream}
	for _, o := range r.outcomes {
		v.runs(o)
		v.wire(o)
		v.answer(o)
		v.want(o)
		v.exec(o)
	}
	sort.SliceStable(v.found, func(i, j int) bool { return v.found[i].check < v.found[j].check })
	r.violations = v.found
	for _, x := range v.found {
		t.Errorf("(%s) %s: %s", x.check, x.entry, x.text)
	}
}

// runs checks each handler run of o: (i) warden forwarded it, (ii) with
// a token for a transfer, not at all for read_file, (iii) without warden's
// _meta members.
func (v *verdict) runs(o *outcome) {
	// The tools/calls warden forwarded for this message, each of which
	// accounts for one handler run.
	var forwarded []*audit.Record
	for i := range o.audit {
		if rec := &o.audit[i]; rec.Method == "tools/call" && rec.Decision == audit.Allow {
			forwarded = append(forwarded, rec)
		}
	}
	tokens := validTokens(o)
	for _, c := range o.calls {
		h := paramsHash(c.Arguments)
		matched := false
		for i, f := range forwarded {
			if f != nil && f.Tool == c.Tool && f.ParamsHash == h {
				matched, forwarded[i] = true, nil
				break
			}
		}
		if !matched {
			v.add("i", o, "%s ran %s with arguments %s (parameters_hash %.12s), but warden forwarded no such tools/call; it recorded %s",
				v.upstream, c.Tool, c.Arguments, h, describe(o.audit))
		}
		switch {
		case c.Tool == "transfer_funds" && c.Effect == nil:
			v.add("ii", o, "%s ran transfer_funds, and its handler recorded no effect", v.upstream)
		case c.Tool == "transfer_funds" && !tokens.spend(*c.Effect, o.audit):
			v.add("ii", o, "%s ran transfer_funds of %v from %q to %q without a valid token for it that warden consumed",
				v.upstream, c.Effect.Amount, c.Effect.Source, c.Effect.Destination)
		case c.Tool == "read_file":
			v.add("ii", o, "%s ran read_file %s, which the tool policy denies", v.upstream, c.Arguments)
		}
		for _, k := range c.MetaKeys {
			if hasWardenPrefix(k) {
				v.add("iii", o, "the %s handler of %s got _meta member %q", v.upstream, c.Tool, k)
			}
		}
	}
}

// wire is (iii) on what the upstream read.
func (v *verdict) wire(o *outcome) {
	for _, line := range o.wire {
		for _, name := range wardenMetaMembers(line) {
			v.add("iii", o, "%s read params._meta member %q", v.upstream, name)
		}
	}
}

// answer is (iv).
func (v *verdict) answer(o *outcome) {
	if needsAnswer(o.entry.Msg) && !answered(o.reply) && !httpRefused(o) {
		v.add("iv", o, "no answer: status %d, %v, body %s", o.reply.status, o.reply.err, joinMsgs(o.reply.msgs))
	}
}

// want is (v): what the specification asks of warden for the entry.
func (v *verdict) want(o *outcome) {
	needs := needsAnswer(o.entry.Msg)
	switch o.entry.Want {
	case wantRefuse:
		if len(o.wire) > 0 {
			v.add("v", o, "to be refused, but %s read %s", v.upstream, strings.Join(o.wire, " | "))
		}
		if needs && !allWardenErrors(o.reply) && !httpRefused(o) {
			v.add("v", o, "to be refused, but answered %s", joinMsgs(o.reply.msgs))
		}
	case wantForward:
		switch {
		case len(o.wire) == 0:
			v.add("v", o, "to be forwarded, but %s read nothing; warden answered %s", v.upstream, joinMsgs(o.reply.msgs))
		case needs && !hasResult(o.reply):
			v.add("v", o, "to be forwarded, but answered %s", joinMsgs(o.reply.msgs))
		case o.entry.Runs != "" && !ran(o.calls, o.entry.Runs):
			v.add("v", o, "a positive control: %s must run on %s, and did not; answered %s", o.entry.Runs, v.upstream, joinMsgs(o.reply.msgs))
		}
	}
}

// exec is (vi).
func (v *verdict) exec(o *outcome) {
	if o.entry.Exec == "" {
		return
	}
	for _, line := range o.wire {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil || msg.Method != "tools/call" {
			continue
		}
		if got := string(msg.Params.Arguments); got != o.entry.Exec {
			v.add("vi", o, "%s read the arguments %s, not the approved %s", v.upstream, got, o.entry.Exec)
		}
	}
}

// httpRefused reports whether warden refused o's POST as HTTP (a 4xx
// status with a plain reason, as for a Content-Type it does not take),
// which only entries that change the HTTP request may be answered with.
func httpRefused(o *outcome) bool {
	return o.entry.HTTP != nil && o.reply.status >= 400 && o.reply.status < 500
}

// attribute gives each outcome warden's records of the client's messages
// it consists of: in a session's records, those after the ping of the
// sync before it and up to the ping of its own sync.
func (r *run) attribute(records []audit.Record) {
	type slot struct {
		session string
		barrier int
	}
	bySlot := map[slot][]audit.Record{}
	next := map[string]int{} // per session, the barrier its next records precede
	for _, rec := range records {
		if rec.Direction != "client" {
			continue
		}
		if next[rec.Session] == 0 {
			next[rec.Session] = 1
		}
		if rec.Method == "ping" && strings.HasPrefix(rec.RequestID, `"barrier-`) {
			next[rec.Session]++
			continue
		}
		k := slot{rec.Session, next[rec.Session]}
		bySlot[k] = append(bySlot[k], rec)
	}
	for _, o := range r.outcomes {
		o.audit = bySlot[slot{o.session, o.barrier}]
	}
}

// describe lists audit records for a failure message.
func describe(recs []audit.Record) string {
	var parts []string
	for _, rec := range recs {
		s := rec.Method
		if rec.Tool != "" {
			s += " " + q(rec.Tool)
		}
		s += " " + string(rec.Decision)
		if rec.Stage != "" {
			s += " by " + rec.Stage + " " + rec.Rule
		}
		if rec.ParamsHash != "" {
			s += fmt.Sprintf(" (parameters_hash %.12s)", rec.ParamsHash)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// tokenSet is the valid transfer_funds tokens issued for one message.
type tokenSet []*validToken

type validToken struct {
	jti    string
	effect transfer
	spent  bool
}

// validTokens returns the tokens issued for o that authorize transfer_funds
// for the gateway's subject.
func validTokens(o *outcome) tokenSet {
	var set tokenSet
	for _, tok := range o.tokens {
		if tok.err != nil || tok.spec.Tool != "transfer_funds" || (tok.spec.Sub != "" && tok.spec.Sub != subject) ||
			tok.spec.Upstream != "" { // every test gateway's upstream is the default
			continue
		}
		set = append(set, &validToken{jti: jtiOf(tok.token), effect: effectOf(tok.spec.Args)})
	}
	return set
}

// spend takes an unspent token of the message for exactly effect, which
// warden consumed (its jti is in the message's audit records).
func (s tokenSet) spend(effect transfer, recs []audit.Record) bool {
	for _, tok := range s {
		if tok.spent || tok.effect != effect {
			continue
		}
		for _, rec := range recs {
			if rec.JTI != "" && rec.JTI == tok.jti {
				tok.spent = true
				return true
			}
		}
	}
	return false
}

// jtiOf reads the jti claim of a compact JWS, without verifying it (the
// test issued it).
func jtiOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		JTI string `json:"jti"`
	}
	_ = json.Unmarshal(payload, &claims)
	return claims.JTI
}

// summary says, for the report, what warden did with the corpus on this
// upstream and which entries broke which check.
func (r *run) summary() string {
	var refused, forwarded, runs int
	for _, o := range r.outcomes {
		if len(o.wire) == 0 {
			refused++
		} else {
			forwarded++
		}
		runs += len(o.calls)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d messages: %d reached no upstream (refused by warden), %d forwarded; handlers ran %d times; %d sessions reopened\n",
		r.upstream, len(r.outcomes), refused, forwarded, runs, r.restarts)
	perCheck := map[string]map[string]bool{}
	for _, v := range r.violations {
		if perCheck[v.check] == nil {
			perCheck[v.check] = map[string]bool{}
		}
		perCheck[v.check][v.entry] = true
	}
	for _, c := range []string{"i", "ii", "iii", "iv", "v", "vi"} {
		var names []string
		for n := range perCheck[c] {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "  (%s) %d entries fail", c, len(names))
		if len(names) > 0 {
			fmt.Fprintf(&b, ": %s", strings.Join(names, ", "))
		}
		b.WriteString("\n")
	}
	var ranTools []string
	for _, o := range r.outcomes {
		for _, c := range o.calls {
			if o.entry.Want != wantForward {
				ranTools = append(ranTools, o.entry.Name+" → "+c.Tool)
			}
		}
	}
	fmt.Fprintf(&b, "  handler runs outside the positive controls: %d", len(ranTools))
	if len(ranTools) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(ranTools, ", "))
	}
	return b.String()
}

// readAudit reads every record of warden's audit log, after checking its
// hash chain.
func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	ctx := context.Background()
	b, err := audit.OpenBackend(audit.KindAuto, path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer b.Close()
	if rep, err := audit.Verify(ctx, b, audit.Anchor{}); err != nil {
		t.Fatalf("audit verify: %v", err)
	} else if !rep.OK() {
		t.Errorf("the audit log's chain is broken: %+v", rep)
	}
	var recs []audit.Record
	if _, err := b.Scan(ctx, func(rec audit.Record) error { recs = append(recs, rec); return nil }); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if len(recs) == 0 {
		t.Fatal("the audit log is empty")
	}
	return recs
}

// effectOf is what transfer_funds with these arguments does, read exactly:
// the members named source, amount and destination.
func effectOf(args string) transfer {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	var e transfer
	e.Source, _ = m["source"].(string)
	e.Amount, _ = m["amount"].(float64)
	e.Destination, _ = m["destination"].(string)
	return e
}

func ran(calls []callRecord, tool string) bool {
	for _, c := range calls {
		if c.Tool == tool {
			return true
		}
	}
	return false
}

// response is the part of a JSON-RPC response the checks read.
type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
		Data struct {
			Stage string `json:"stage"`
		} `json:"data"`
	} `json:"error"`
}

func responses(r reply) []response {
	var out []response
	for _, m := range r.msgs {
		var res response
		if json.Unmarshal(m, &res) == nil && (res.Result != nil || res.Error != nil) {
			out = append(out, res)
		}
	}
	return out
}

func answered(r reply) bool { return len(responses(r)) > 0 }

func hasResult(r reply) bool {
	for _, res := range responses(r) {
		if res.Result != nil {
			return true
		}
	}
	return false
}

// allWardenErrors reports whether r has answers, all of them errors that
// name the warden stage that refused.
func allWardenErrors(r reply) bool {
	res := responses(r)
	for _, x := range res {
		if x.Error == nil || x.Error.Data.Stage == "" {
			return false
		}
	}
	return len(res) > 0
}
