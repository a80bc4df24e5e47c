package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/pin"
)

// page is what every template gets.
type page struct {
	Title string
	Page  string // "pending", "history", "pins": the current navigation item
	User  string // the approver identity; "" when logged out
	CSRF  string
	Flash string
	// Refresh, when set, is where the page sends the browser at once (a
	// same-site navigation, unlike a redirect from a cross-site one).
	Refresh string
	Data    any
}

// parsePages parses each page template together with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"pending", "history", "pins", "login", "message"} {
		t, err := template.New(name).ParseFS(assets, "assets/templates/layout.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render executes the page template name (or one of its templates, with
// the "name/block" form) into a buffer first, so that a failure never sends
// half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	set, block := name, "layout"
	if i := strings.IndexByte(name, '/'); i >= 0 {
		set, block = name[:i], name[i+1:]
	}
	var buf bytes.Buffer
	if err := c.pages[set].ExecuteTemplate(&buf, block, p); err != nil {
		c.log.Error("console: rendering failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageFor fills the fields every logged-in page has.
func (c *Console) pageFor(r *http.Request, name, title string, data any) page {
	id, s := sessionOf(r)
	return page{Title: title, Page: name, User: s.approver(), CSRF: s.csrf, Flash: c.sessions.takeFlash(id), Data: data}
}

// renderError shows msg to a logged-in person.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, s session, status int, msg string) {
	c.render(w, r, status, "message", page{Title: http.StatusText(status), User: s.approver(), CSRF: s.csrf, Data: msg})
}

// pendingData is the pending page's data.
type pendingData struct {
	Calls []callView
}

// callView is a pending call as the page shows it.
type callView struct {
	approval.Pending
	Args     string        // the canonical arguments, indented
	ArgsHTML template.HTML // Args with deceptive characters escaped and numbers grouped (reveal.go)
	Shown    shownFacts    // the other caller-controlled texts, revealed
	ToolText string        // the tool with deceptive characters as escapes, as plain text (for the script)
	Warnings []string      // what reveal found anywhere on the card
	Class    string        // classification and tier in words
	Created  string
	Expires  string
	Diff     *diffView
	HashHead string // the first 12 hex digits, for the sentence by the buttons
	Confirm  bool   // Approve needs the confirmation gesture
	HashLead string // the characters the gesture asks for
	Need     int    // distinct approvers the call needs (the two-person rule)
	Votes    []voteView
	MyVote   bool // the person viewing already approved; another must
}

// voteView is one approval of a call that needs several.
type voteView struct {
	Approver template.HTML
	At       string
}

// shownFacts are a card's caller-controlled texts, with deceptive
// characters escaped.
type shownFacts struct {
	Tool, Upstream, Subject, Session, Description template.HTML
	Hash, HashHead                                template.HTML
	Findings                                      []template.HTML
}

func (c *Console) pendingPage(w http.ResponseWriter, r *http.Request) {
	_, s := sessionOf(r)
	c.render(w, r, http.StatusOK, "pending", c.pageFor(r, "pending", "Pending approvals", c.pendingData(s.approver())))
}

// pendingList serves the list alone, for the script's live updates.
func (c *Console) pendingList(w http.ResponseWriter, r *http.Request) {
	_, s := sessionOf(r)
	c.render(w, r, http.StatusOK, "pending/pending-list", page{Page: "pending", User: s.approver(), CSRF: s.csrf, Data: c.pendingData(s.approver())})
}

// pendingData is the pending list as the person approver sees it.
func (c *Console) pendingData(approver string) pendingData {
	list := c.q.List()
	hist := c.q.History()
	d := pendingData{Calls: make([]callView, len(list))}
	for i, p := range list {
		v := callView{Pending: p, Args: indent(p.Arguments), Class: classText(p.Request),
			Created: stamp(p.Created), Expires: stamp(p.Expires)}
		v.HashHead = p.Hash[:min(12, len(p.Hash))]
		v.Confirm = c.needsConfirm(p)
		v.HashLead = p.Hash[:min(ConfirmChars, len(p.Hash))]
		v.ToolText = plain(p.Tool)
		if v.Need = c.q.Needs(p); v.Need > 1 {
			votes, err := c.q.Votes(p.ID)
			if err != nil {
				c.log.Warn("console: cannot read the approvals of a call", "approval", p.ID, "err", err)
			}
			for _, vote := range votes {
				v.Votes = append(v.Votes, voteView{Approver: revealText(vote.Approver, nil), At: stamp(vote.At)})
				v.MyVote = v.MyVote || vote.Approver == approver
			}
		}
		var f findings
		v.ArgsHTML = revealArgs(v.Args, &f)
		v.Shown = shownFacts{Tool: revealText(p.Tool, &f), Upstream: revealText(p.Upstream, &f),
			Subject: revealText(p.Subject, &f), Session: revealText(p.Session, &f), Description: revealText(p.Description, &f),
			Hash: revealText(p.Hash, &f), HashHead: revealText(v.HashHead, &f)}
		for _, x := range p.Findings {
			v.Shown.Findings = append(v.Shown.Findings, revealText(x, &f))
		}
		v.Diff = baselineDiff(p, hist, v.Args)
		v.Diff.reveal(&f)
		v.Warnings = f.Warnings()
		d.Calls[i] = v
	}
	return d
}

// baselineDiff compares p with the last approved call of the same tool on
// the same upstream for the same user that ran (the gateway forwarded it
// and the upstream answered without error): what was last allowed to run,
// so that a call repeated by an attacker is compared with the honest one
// and not with itself. Pending calls are never the baseline, and neither
// is an approval whose call never ran; the view names the newest such
// approval it passed over. With no call to compare with, the view says so.
func baselineDiff(p approval.Pending, hist []approval.Decided, args string) *diffView {
	skipped := ""
	for _, h := range hist { // newest first
		if !h.Approved || h.Tool != p.Tool || h.Upstream != p.Upstream || h.Subject != p.Subject || !h.Created.Before(p.Created) {
			continue
		}
		if h.Executed.IsZero() {
			if skipped == "" {
				skipped = fmt.Sprintf("; %s, approved by %s at %s, did not run or failed", h.ID, h.Approver, stamp(h.At))
			}
			continue
		}
		return newDiff(indent(h.Arguments), args, fmt.Sprintf("the last approved call of %s for %s that ran: %s, approved by %s at %s, ran at %s%s",
			h.Tool, orUnknown(h.Subject), h.ID, h.Approver, stamp(h.At), stamp(h.Executed), skipped))
	}
	return &diffView{None: true, Against: fmt.Sprintf("no call of %s on %s for %s has been approved and run before%s",
		p.Tool, p.Upstream, orUnknown(p.Subject), skipped)}
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown user"
	}
	return s
}

// indent pretty-prints canonical JSON without changing any value: only
// whitespace is added between tokens.
func indent(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// notWaiting answers a decision on a call that is not waiting: who decided
// it first, when the history knows, else that nothing was changed.
func (c *Console) notWaiting(w http.ResponseWriter, r *http.Request, s session, callID string) {
	if h, ok := c.outcomeOf(callID); ok {
		c.log.Info("console: decision too late", "approval", callID, "approver", s.approver(), "decided_by", h.Approver, "outcome", h.Outcome())
		c.render(w, r, http.StatusConflict, "message", page{Title: "Already decided", User: s.approver(), CSRF: s.csrf, Data: tooLate(h)})
		return
	}
	c.renderError(w, r, s, http.StatusNotFound, "No call "+callID+" is waiting: it was decided, timed out or cancelled. Nothing was changed.")
}

// outcomeOf finds the outcome of call id in the history.
func (c *Console) outcomeOf(id string) (approval.Decided, bool) {
	for _, h := range c.q.History() {
		if h.ID == id {
			return h, true
		}
	}
	return approval.Decided{}, false
}

// tooLate tells a person whose decision lost the race who decided the call
// first, what, and when.
func tooLate(h approval.Decided) template.HTML {
	var b strings.Builder
	b.WriteString("Your decision was not recorded: call " + template.HTMLEscapeString(h.ID) + " (" + string(revealText(h.Tool, nil)) + ") was already ")
	switch h.Outcome() {
	case "approved", "denied":
		b.WriteString("<strong>" + h.Outcome() + "</strong> by <strong>" + string(revealText(h.Approver, nil)) + "</strong>")
	default:
		b.WriteString("<strong>" + h.Outcome() + "</strong>")
	}
	b.WriteString(" at " + stamp(h.At))
	if h.Reason != "" {
		b.WriteString(", with the reason “" + string(revealText(h.Reason, nil)) + "”")
	}
	b.WriteString(". What they decided stands.")
	return template.HTML(b.String())
}

// needsConfirm reports whether approving p needs the confirmation gesture.
func (c *Console) needsConfirm(p approval.Pending) bool { return c.confirm[p.Classification] }

// confirmed reports whether typed is the start of hash that the gesture asks
// for: its first ConfirmChars characters, in any case, spaces ignored.
func confirmed(typed, hash string) bool {
	typed = strings.ToLower(strings.Join(strings.Fields(typed), ""))
	return len(hash) >= ConfirmChars && typed == strings.ToLower(hash[:ConfirmChars])
}

func classText(r approval.Request) string {
	if r.Classification == 0 {
		return "unclassified"
	}
	s := fmt.Sprintf("level %d", r.Classification)
	if r.Tier > 0 {
		s += fmt.Sprintf(", Tier %d", r.Tier)
	}
	if r.ClassRule != "" {
		s += " (rule " + r.ClassRule + ")"
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// decide approves or denies a pending call: the form must carry the
// parameters_hash that was shown (CSRF was checked by requireSession).
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	id, s := sessionOf(r)
	callID := r.PathValue("id")
	hash := r.PostForm.Get("hash")
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		c.renderError(w, r, s, http.StatusBadRequest, "The form did not say approve or deny. Nothing was decided.")
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if utf8.RuneCountInString(reason) > 500 || !utf8.ValidString(reason) {
		c.renderError(w, r, s, http.StatusBadRequest, "The reason is longer than 500 characters. Nothing was decided.")
		return
	}
	p, ok := c.q.Get(callID)
	if !ok { // decided, gone, or the store cannot say: decide nothing
		c.notWaiting(w, r, s, callID)
		return
	}
	if approve && c.needsConfirm(p) && !confirmed(r.PostForm.Get("confirm"), hash) {
		c.log.Warn("console: approval without the confirmation refused", "approval", callID, "approver", s.approver())
		c.renderError(w, r, s, http.StatusBadRequest, fmt.Sprintf("Call %s is sensitive (%s): to approve it, type the first %d characters of its parameters_hash in the confirmation field. Nothing was decided.",
			callID, classText(p.Request), ConfirmChars))
		return
	}
	var more *approval.MoreApprovals
	switch err := c.q.DecideExact(callID, hash, approve, s.approver(), reason); {
	case errors.As(err, &more):
		c.log.Info("console: partial approval", "approval", callID, "approver", s.approver(), "approvals", len(more.Votes), "needed", more.Need)
		c.sessions.setFlash(id, fmt.Sprintf("Your approval of %s (%s) is recorded: %d of the %d different approvers it needs. It runs once %d more person approves; nothing has run yet.",
			callID, plain(p.Tool), len(more.Votes), more.Need, more.Need-len(more.Votes)))
		http.Redirect(w, r, "/console", http.StatusSeeOther)
		return
	case errors.Is(err, approval.ErrSameApprover):
		c.renderError(w, r, s, http.StatusConflict, "You already approved "+callID+": it needs the approval of another person. Nothing was changed.")
		return
	case errors.Is(err, approval.ErrUnknown):
		c.notWaiting(w, r, s, callID)
		return
	case errors.Is(err, approval.ErrHash):
		c.log.Warn("console: decision with another parameters_hash refused", "approval", callID, "approver", s.approver(), "hash", hash)
		c.renderError(w, r, s, http.StatusConflict, "The parameters_hash in your form is not the one of call "+callID+
			": the page you decided on does not show these arguments. Nothing was decided; open the pending list again.")
		return
	case err != nil:
		c.renderError(w, r, s, http.StatusBadRequest, err.Error())
		return
	}
	verb := "Denied"
	if approve {
		verb = "Approved"
	}
	c.log.Info("console: decision", "approval", callID, "approved", approve, "approver", s.approver(), "tool", p.Tool, "parameters_hash", hash)
	msg := fmt.Sprintf("%s %s: %s on %s.", verb, callID, plain(p.Tool), plain(p.Upstream))
	if approve {
		msg += " It runs once, with exactly the arguments you saw."
	} else {
		msg += " The client is told that " + s.approver() + " denied it."
	}
	c.sessions.setFlash(id, msg)
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// historyData is the history page's data.
type historyData struct {
	Filter   historyFilter
	Outcomes []string
	Rows     []historyRow
	Total    int // outcomes remembered, before filtering
	Limit    int
	Audit    *auditSummary // nil without an audit log
}

type historyFilter struct {
	Tool, User, Decision, From, To string
	Problem                        string // why the filter could not be applied
}

type historyRow struct {
	approval.Decided
	When       string
	Args       string
	Shown      historyShown // caller- and approver-given texts, revealed
	Warnings   []string
	AuditText  string
	AuditClass string // "ok", "bad" or "none"
}

// historyShown are a history row's texts with deceptive characters escaped.
type historyShown struct {
	Args, Tool, Upstream, Subject, Approver, Reason, Hash template.HTML
}

func newHistoryRow(h approval.Decided) historyRow {
	row := historyRow{Decided: h, When: stamp(h.At), Args: indent(h.Arguments)}
	var f findings
	row.Shown = historyShown{Args: revealArgs(row.Args, &f), Tool: revealText(h.Tool, &f), Upstream: revealText(h.Upstream, &f),
		Subject: revealText(h.Subject, &f), Approver: revealText(h.Approver, &f), Reason: revealText(h.Reason, &f),
		Hash: revealText(h.Hash, &f)}
	row.Warnings = f.Warnings()
	return row
}

type auditSummary struct {
	Records int
	Problem string // the first break in the chain; "" when intact
}

const timeLayout = "2006-01-02T15:04"

func (c *Console) historyPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := historyFilter{Tool: strings.TrimSpace(q.Get("tool")), User: strings.TrimSpace(q.Get("user")),
		Decision: q.Get("decision"), From: q.Get("from"), To: q.Get("to")}
	var from, to time.Time
	var err error
	if f.From != "" {
		if from, err = time.Parse(timeLayout, f.From); err != nil {
			f.Problem = "From is not a time like 2026-11-30T14:05 (UTC)."
		}
	}
	if f.To != "" {
		if to, err = time.Parse(timeLayout, f.To); err != nil {
			f.Problem = "To is not a time like 2026-11-30T14:05 (UTC)."
		}
		to = to.Add(time.Minute) // inclusive of the minute given
	}
	all := c.q.History()
	d := historyData{Filter: f, Outcomes: []string{"approved", "denied", "timed out", "cancelled"},
		Total: len(all), Limit: approval.HistoryLimit}
	for _, h := range all {
		if f.Problem == "" && !matches(h, f, from, to) {
			continue
		}
		d.Rows = append(d.Rows, newHistoryRow(h))
	}
	if c.audit != nil {
		d.Audit = c.auditStatus(r.Context(), d.Rows)
	}
	c.render(w, r, http.StatusOK, "history", c.pageFor(r, "history", "History", d))
}

// matches reports whether h passes the filter. Tool and user match
// substrings, case-insensitively; the user matches the call's subject or
// its approver.
func matches(h approval.Decided, f historyFilter, from, to time.Time) bool {
	has := func(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }
	switch {
	case f.Tool != "" && !has(h.Tool, f.Tool):
		return false
	case f.User != "" && !has(h.Subject, f.User) && !has(h.Approver, f.User):
		return false
	case f.Decision != "" && h.Outcome() != f.Decision:
		return false
	case !from.IsZero() && h.At.Before(from):
		return false
	case !to.IsZero() && !h.At.Before(to):
		return false
	}
	return true
}

// auditStatus finds each row's audit record (same tool and parameters_hash,
// written after the call was held, preferring one that names the row's
// approver) and says whether the chain up to it is intact.
func (c *Console) auditStatus(ctx context.Context, rows []historyRow) *auditSummary {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hashes := map[string]bool{}
	for _, row := range rows {
		hashes[row.Hash] = true
	}
	res, err := c.audit.Query(ctx, func(rec *audit.Record) bool { return hashes[rec.ParamsHash] }, 10*approval.HistoryLimit)
	sum := &auditSummary{Records: res.Records}
	if err != nil {
		sum.Problem = "the audit log could not be read: " + err.Error()
	} else if res.Problem != nil {
		sum.Problem = res.Problem.String()
	}
	for i := range rows {
		row := &rows[i]
		var found *audit.Checked
		for j := range res.Matches {
			m := &res.Matches[j]
			if m.Tool != row.Tool || m.ParamsHash != row.Hash || m.Time.Before(row.Created.Add(-time.Second)) {
				continue
			}
			if found == nil || (m.Approver == row.Approver && found.Approver != row.Approver) {
				found = m
			}
		}
		switch {
		case found == nil:
			row.AuditText, row.AuditClass = "no audit record found", "none"
		case found.Verified:
			row.AuditText, row.AuditClass = fmt.Sprintf("record %d (%s, approver %q): chain intact up to it", found.Seq, found.Decision, found.Approver), "ok"
		default:
			row.AuditText, row.AuditClass = fmt.Sprintf("record %d: NOT verified, the chain is broken at or before it", found.Seq), "bad"
		}
	}
	return sum
}

// pinsData is the pins page's data.
type pinsData struct {
	Enabled bool
	Pending []pendingPin
	Pins    []pinRow
}

type pendingPin struct {
	pin.Pending
	Diff        string
	NewHashHead string
	Seen        string
	// The upstream's texts with deceptive characters escaped: a tool
	// definition is where a rug pull hides.
	ShownTool, ShownUpstream, ShownDiff template.HTML
	Warnings                            []string
}

type pinRow struct {
	pin.Record
	HashHead                 string
	At                       string
	ShownTool, ShownUpstream template.HTML
}

func (c *Console) pinsPage(w http.ResponseWriter, r *http.Request) {
	d := pinsData{Enabled: c.pins != nil}
	if c.pins != nil {
		for _, p := range c.pins.Pending() {
			var f findings
			pp := pendingPin{Pending: p, Diff: p.Diff(), NewHashHead: head(p.NewHash), Seen: p.Seen.UTC().Format(time.RFC3339),
				ShownTool: revealText(p.Tool, &f), ShownUpstream: revealText(p.Upstream, &f)}
			pp.ShownDiff = revealText(pp.Diff, &f)
			pp.Warnings = f.Warnings()
			d.Pending = append(d.Pending, pp)
		}
		for _, rec := range c.pins.Pins() {
			d.Pins = append(d.Pins, pinRow{Record: rec, HashHead: head(rec.Hash), At: rec.At.UTC().Format(time.RFC3339),
				ShownTool: revealText(rec.Tool, nil), ShownUpstream: revealText(rec.Upstream, nil)})
		}
	}
	c.render(w, r, http.StatusOK, "pins", c.pageFor(r, "pins", "Tool pins", d))
}

// decidePin approves or rejects a changed tool definition. The form carries
// the hash that was shown: a definition that changed again since is not
// approved by it.
func (c *Console) decidePin(w http.ResponseWriter, r *http.Request) {
	id, s := sessionOf(r)
	if c.pins == nil {
		c.renderError(w, r, s, http.StatusNotFound, "Tool pinning is off. Nothing was decided.")
		return
	}
	upstream, tool, hash := r.PostForm.Get("upstream"), r.PostForm.Get("tool"), r.PostForm.Get("hash")
	var err error
	switch r.PostForm.Get("decision") {
	case "approve":
		_, err = c.pins.Approve(r.Context(), upstream, tool, hash, s.approver())
	case "reject":
		err = c.pins.Reject(r.Context(), upstream, tool, hash, s.approver())
	default:
		c.renderError(w, r, s, http.StatusBadRequest, "The form did not say approve or reject. Nothing was decided.")
		return
	}
	if err != nil {
		c.log.Warn("console: pin decision refused", "upstream", upstream, "tool", tool, "hash", hash, "approver", s.approver(), "err", err)
		c.renderError(w, r, s, http.StatusConflict, "Not decided: "+err.Error()+". Open the pins page again to see the definition as it is now.")
		return
	}
	c.log.Info("console: pin decision", "upstream", upstream, "tool", tool, "hash", hash, "decision", r.PostForm.Get("decision"), "approver", s.approver())
	c.sessions.setFlash(id, fmt.Sprintf("%s %s on %s (%s…). The client sees the change at its next tools/list.", strings.ToUpper(r.PostForm.Get("decision")[:1])+r.PostForm.Get("decision")[1:]+"d", tool, upstream, head(hash)))
	http.Redirect(w, r, "/console/pins", http.StatusSeeOther)
}

// head is the first 12 characters of a hash, for display.
func head(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
