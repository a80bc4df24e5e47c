package gateway_test

import (
	"log/slog"
	"testing"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
)

// optionsFromYAML turns a configuration into gateway options the way the
// CLI does: parse, validate, FromConfig. It returns the configuration too.
func optionsFromYAML(t *testing.T, yaml string) (*config.Config, gateway.Options) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts, err := assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, opts
}

// gatewayFromYAML builds a gateway from a configuration the way the CLI
// does: parse, validate, FromConfig, New. The caller closes it.
func gatewayFromYAML(t *testing.T, yaml string) *gateway.Gateway {
	t.Helper()
	_, opts := optionsFromYAML(t, yaml)
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
