package telemetry

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

// TestGoldenOCSFAgainstTheSchema: the OCSF events the Recorder emits for
// every span type's operation, refused and with a finding too, are valid
// against the official OCSF 1.8.0 schema (with warden's extension for the
// aitf profile), in both profiles.
func TestGoldenOCSFAgainstTheSchema(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	for _, profile := range []ocsf.Profile{ocsf.ProfileStandard, ocsf.ProfileAITF} {
		for name, g := range goldens {
			for _, variant := range []string{"as is", "refused"} {
				sink := &memorySink{}
				op := *g.op
				if variant == "refused" {
					op.Denial = &Denial{Stage: "tool-policy", Rule: "deny", Reason: "listed"}
					op.Findings = []ocsf.Finding{{Title: "injection", Rule: "security: prompt_injection", Severity: ocsf.SeverityHigh}}
				}
				NewRecorder(Options{OCSFSink: sink, OCSFProfile: profile}).Record(context.Background(), &op)
				if len(sink.out) == 0 {
					t.Errorf("%s %s %s: no OCSF event", profile, name, variant)
				}
				for _, e := range sink.out {
					if ocsfschematest.Check(t, s, []byte(e)) > 0 {
						t.Logf("%s %s %s", profile, name, variant)
					}
				}
			}
		}
	}
}
