package gateway_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureGatewayImportsNoConfiguration: package gateway takes
// typed Options; the builder that reads the configuration
// (internal/assemble) is outside it, and gateway depends on neither, directly
// or through another package. A gateway that imported the configuration
// again would fail here by name.
func TestArchitectureGatewayImportsNoConfiguration(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/agentwarden/warden/internal/gateway").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/agentwarden/warden/internal/jsonrpc") {
		t.Fatalf("go list -deps listed no jsonrpc, which gateway imports: the listing is not gateway's dependencies\n%s", out)
	}
	for _, forbidden := range []string{
		"github.com/agentwarden/warden/internal/config",
		"github.com/agentwarden/warden/internal/assemble",
	} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("package gateway depends on %s: it takes typed Options, and internal/assemble turns a configuration into them", forbidden)
		}
	}
}
