package replay

// Evidence that a run behind warden went through the gateway: what the
// gateway's audit logs recorded while the probes ran. A behind-warden
// report whose gateway recorded nothing did not replay through warden, and
// says so.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// GatewayEvidence is what the in-process gateway's audit logs hold after a
// behind-warden run.
type GatewayEvidence struct {
	// AuditRecords counts the message records (checkpoints left out).
	AuditRecords int `json:"audit_records"`
	// Rules lists each stage/rule that refused or rewrote a message, with
	// the decision and how many times: "deny zero_trust/token ×2",
	// "allow security/prompt_injection/override ×1" (a quarantine).
	Rules []string `json:"rules,omitempty"`
}

// auditLogs are the audit log paths of a gateway configured under dir:
// its own and, for MCP, the consent gateway's (dir/consent).
func auditLogs(dir string) []string {
	return []string{filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "consent", "audit.jsonl")}
}

// readGatewayEvidence reads the audit logs that exist among paths.
func readGatewayEvidence(paths []string) (*GatewayEvidence, error) {
	ev := &GatewayEvidence{}
	rules := map[string]int{}
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			// The gateway is still running: its log may end in a record
			// being written, or in the zeroed space a backend reserved.
			line := bytes.Trim(sc.Bytes(), "\x00 \r")
			var r struct {
				Kind, Decision, Stage, Rule string
			}
			if len(line) == 0 || json.Unmarshal(line, &r) != nil {
				continue
			}
			if r.Kind != "" {
				continue
			}
			ev.AuditRecords++
			if r.Rule != "" {
				rules[r.Decision+" "+r.Stage+"/"+r.Rule]++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	for k, n := range rules {
		ev.Rules = append(ev.Rules, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(ev.Rules)
	return ev, nil
}

// note is the evidence as a report note.
func (ev *GatewayEvidence) note() string {
	if ev.AuditRecords == 0 {
		return "gateway audit log: no records: nothing of this run went through warden"
	}
	s := fmt.Sprintf("gateway audit log: %d records", ev.AuditRecords)
	if len(ev.Rules) > 0 {
		s += "; rules applied (decision stage/rule): " + strings.Join(ev.Rules, ", ")
	}
	return s
}
