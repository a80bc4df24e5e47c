package ir

import _ "embed"

// Schema is the JSON Schema (2020-12) of IR version Version, for editors
// and external tools. Parse enforces the same structure with positions.
//
//go:embed schema.json
var Schema []byte
