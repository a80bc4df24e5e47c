// Package ocsfschematest loads the official OCSF schema snapshots (in
// ../shared/ocsf-schema next to the repository) together with warden's own
// OCSF extension (internal/ocsf/extension), once per test binary, and checks
// events against them. It is for tests; nothing else imports it.
//
// Without the snapshots tests skip, or fail when WARDEN_REQUIRE_DEPS=1.
//
//	s := ocsfschematest.Schema(t, ocsfschematest.V180)
//	ocsfschematest.Check(t, s, eventJSON)
package ocsfschematest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/ocsf/ocsfschema"
)

// The snapshots in ../shared/ocsf-schema.
const (
	V180    = "1.8.0"
	V190Dev = "1.9.0-dev"
)

// ExtensionDir is warden's OCSF extension, relative to the repository root.
const ExtensionDir = "internal/ocsf/extension"

type loaded struct {
	s   *ocsfschema.Schema
	err error
}

var (
	mu    sync.Mutex
	cache = map[string]loaded{}
)

// Root returns the repository root (the folder holding warden's go.mod),
// or "" when the working directory is not inside it.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Schema returns the official schema of the given version with warden's
// extension loaded, skipping t (or failing it under WARDEN_REQUIRE_DEPS=1)
// when the snapshot is not there. A schema that does not load fails t.
func Schema(t testing.TB, version string) *ocsfschema.Schema {
	t.Helper()
	mu.Lock()
	l, ok := cache[version]
	if !ok {
		l = load(version)
		cache[version] = l
	}
	mu.Unlock()
	if l.err != nil {
		if os.IsNotExist(l.err) {
			if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
				t.Fatalf("the OCSF schema %s (../shared/ocsf-schema) is required: %v", version, l.err)
			}
			t.Skipf("the OCSF schema %s (../shared/ocsf-schema) is not present: %v", version, l.err)
		}
		t.Fatalf("loading OCSF %s with warden's extension: %v", version, l.err)
	}
	return l.s
}

func load(version string) loaded {
	root := Root()
	if root == "" {
		return loaded{err: os.ErrNotExist}
	}
	dir := filepath.Join(root, "..", "shared", "ocsf-schema", version)
	if _, err := os.Stat(filepath.Join(dir, "version.json")); err != nil {
		return loaded{err: err}
	}
	s, err := ocsfschema.Load(os.DirFS(dir), os.DirFS(filepath.Join(root, filepath.FromSlash(ExtensionDir))))
	return loaded{s: s, err: err}
}

// Check reports every problem s finds in event as an error of t, with the
// event, and returns the number of problems.
func Check(t testing.TB, s *ocsfschema.Schema, event []byte) int {
	t.Helper()
	ps := s.Validate(event)
	if len(ps) == 0 {
		return 0
	}
	var b bytes.Buffer
	if json.Indent(&b, event, "  ", "  ") != nil {
		b.Reset()
		b.Write(event)
	}
	for _, p := range ps {
		t.Errorf("invalid OCSF %s: %s", s.Version(), p)
	}
	t.Logf("the event:\n  %s", b.String())
	return len(ps)
}

// CheckLines checks each non-empty line of JSON Lines data as one event,
// and returns the number of events.
func CheckLines(t testing.TB, s *ocsfschema.Schema, data []byte) int {
	t.Helper()
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		Check(t, s, line)
	}
	return n
}
