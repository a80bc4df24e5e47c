package demo

// Refusals on record: the steps that show a refusal read it back from the
// audit log, the same hash-chained log the Record part verifies, rather
// than from the answer alone. A refusal at the listener, before any session
// exists, never reaches a relay or a stage; the listener tells the gateway,
// which records it before it answers (docs/audit.md, "Refusals at the
// wire"), with the body's length and SHA-256 and never the body.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
)

// onRecord returns the last record of the audit log that match accepts,
// and whether there is one. A record after a break in the hash chain is an
// error: the demo shows only records the chain vouches for.
func (s *scene) onRecord(ctx context.Context, match func(*audit.Record) bool) (audit.Record, bool, error) {
	res, err := s.audit.Query(ctx, match, 0)
	if err != nil {
		return audit.Record{}, false, err
	}
	if len(res.Matches) == 0 {
		return audit.Record{}, false, nil
	}
	last := res.Matches[len(res.Matches)-1]
	if !last.Verified {
		return audit.Record{}, false, fmt.Errorf("audit record %d: the hash chain breaks before it: %v", last.Seq, res.Problem)
	}
	return last.Record, true, nil
}

// strayBody is what a client posts in a session warden never issued: a
// transfer to mallory, whose name the audit log must not hold.
const strayBody = `{"jsonrpc":"2.0","id":907,"method":"tools/call","params":{"name":"transfer_funds",` +
	`"arguments":{"account_id":"ACC_123","amount":5000,"recipient":"mallory@example.com"}}}`

// straySession is the Mcp-Session-Id it claims: one the listener never issued.
const straySession = "s-made-up-0001"

// causeBytes reads the body's length and hash out of a refusal's recorded
// cause ("… (cause: raw 98 bytes sha256 9f…; …").
var causeBytes = regexp.MustCompile(`\(cause: raw (-?[0-9]+) bytes(?: sha256 ([0-9a-f]{64}))?`)

// unknownSession posts strayBody in a session the listener does not hold:
// it answers 404 in plain text, before any session, stage or relay sees the
// message. The step then finds the refusal in the audit log: its stage and
// rule, and the body as its length and SHA-256 only.
func (s *scene) unknownSession(ctx context.Context) error {
	const what = "a tools/call in a session warden never issued (Mcp-Session-Id: " + straySession + ")"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(strayBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", straySession)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	told := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, firstLine(answer))
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		s.record(Step{Action: what, Outcome: "relayed", Detail: told})
		s.expect(false, "%s was not refused (%s)", what, told)
		return nil
	}
	// Its record: a refusal whose cause names the session id claimed (a
	// text refusal has no request id: the body is not decoded).
	rec, found, err := s.onRecord(ctx, func(r *audit.Record) bool {
		return r.Method == gateway.MethodRefused && r.Direction == "client" &&
			strings.Contains(r.Reason, "; unknown session "+straySession)
	})
	if err != nil {
		return err
	}
	st := Step{Action: what, Outcome: "refused", Detail: told + " (plain text: the stage and rule above are read from the audit log)"}
	if !found {
		s.expect(false, "%s: %s, but the audit log has no record of it", what, told)
		s.record(st)
		return nil
	}
	st.By = rec.Stage + " (" + rec.Rule + ")"
	sum := sha256.Sum256([]byte(strayBody))
	want := hex.EncodeToString(sum[:])
	m := causeBytes.FindStringSubmatch(rec.Reason)
	switch {
	case rec.Decision != audit.Deny:
		s.expect(false, "%s: audit record %d says %s", what, rec.Seq, rec.Decision)
	case m == nil:
		s.expect(false, "%s: audit record %d gives no length and hash of the body: %q", what, rec.Seq, rec.Reason)
	case m[1] != strconv.Itoa(len(strayBody)) || m[2] != want:
		s.expect(false, "%s: audit record %d gives the body as %s bytes sha256 %q, but %d bytes sha256 %s were sent",
			what, rec.Seq, m[1], m[2], len(strayBody), want)
	case strings.Contains(rec.Reason, "mallory") || rec.Tool != "" || rec.ParamsHash != "" || rec.Session != "":
		s.expect(false, "%s: audit record %d holds more of the body than its length and hash: %+v", what, rec.Seq, rec)
	default:
		st.Detail += fmt.Sprintf("\n        on record: audit record %d (the chain verifies up to it), %s, %s, reason\n"+
			"          %q\n"+
			"        the body as its length and SHA-256 (those of the bytes sent) only: no tool, no recipient",
			rec.Seq, rec.Method, rec.Decision, strings.Replace(rec.Reason, m[2], m[2][:16]+"…", 1))
	}
	s.record(st)
	return nil
}
