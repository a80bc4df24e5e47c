package config

import "github.com/agentwarden/warden/internal/glob"

// Pattern is a method or tool name pattern of an allow or deny list; see
// glob.Pattern, where it is defined so that the gateway applies lists
// without importing the configuration.
type Pattern = glob.Pattern

// List is an allow list and a deny list of patterns; see glob.List.
type List = glob.List

// CompilePattern checks s and returns it as a Pattern (glob.Compile).
func CompilePattern(s string) (Pattern, error) { return glob.Compile(s) }
