package oatf

import (
	"path/filepath"
	"testing"
)

// TestValidateFollowsRuleText runs warden's own validate cases
// (testdata/validate/spec-text.yaml, the conformance suite's layout): the
// rule ids and paths the rule text of SDK §3.2 gives where the vendored
// fixtures are silent.
func TestValidateFollowsRuleText(t *testing.T) {
	r := &conformanceRun{t: t}
	r.suite("validate/spec-text.yaml", filepath.Join("testdata", "validate", "spec-text.yaml"))
	if r.failed > 0 || r.passed == 0 {
		t.Errorf("%d passed, %d failed", r.passed, r.failed)
	}
}
