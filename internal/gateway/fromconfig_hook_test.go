package gateway

import "testing"

// OptionsFromYAML builds Options from a configuration the way the CLI does
// (parse, validate, assemble.FromConfig), for the tests in this package
// that check the configuration's wiring. Package assemble imports gateway,
// so these tests cannot import it: the external test package, in the same
// test binary, sets the hook (fromconfig_hook_ext_test.go).
var OptionsFromYAML func(t *testing.T, yaml string) Options
