package assemble

import (
	"maps"
	"testing"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Spans and OCSF events name an HTTP upstream by its URL without the
// query, which may carry a key; a stdio upstream has no URL, and each
// upstream's transport is named as telemetry names it.
func TestServerURLsAndTransports(t *testing.T) {
	ups := []config.Upstream{
		{Name: "pay", URL: "https://mcp.example.com/pay/mcp?api_key=s3cret"},
		{Name: "fs", Command: []string{"fs-server"}},
	}
	if got, want := serverURLs(ups), map[string]string{"pay": "https://mcp.example.com/pay/mcp"}; !maps.Equal(got, want) {
		t.Errorf("serverURLs = %v, want %v (no query, no stdio entry)", got, want)
	}
	want := map[string]string{"pay": telemetry.TransportStreamableHTTP, "fs": telemetry.TransportStdio}
	if got := serverTransports(ups); !maps.Equal(got, want) {
		t.Errorf("serverTransports = %v, want %v", got, want)
	}
}
