package gateway_test

import (
	"testing"

	"github.com/agentwarden/warden/internal/gateway"
)

func init() {
	gateway.OptionsFromYAML = func(t *testing.T, yaml string) gateway.Options {
		_, opts := optionsFromYAML(t, yaml)
		return opts
	}
}
