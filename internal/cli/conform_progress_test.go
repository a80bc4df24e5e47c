package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeInfo is the os.FileInfo of a file of the given mode.
type fakeInfo struct{ mode fs.FileMode }

func (f fakeInfo) Name() string       { return "stderr" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return nil }

// fakeStderr is a buffer that Stats like a file of the given mode.
type fakeStderr struct {
	bytes.Buffer
	mode fs.FileMode
}

func (f *fakeStderr) Stat() (os.FileInfo, error) { return fakeInfo{f.mode}, nil }

func TestIsTerminal(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		want bool
	}{
		{"terminal", fs.ModeDevice | fs.ModeCharDevice | 0o620, true},
		{"regular file", 0o644, false},
		{"pipe", fs.ModeNamedPipe | 0o600, false},
		{"socket", fs.ModeSocket | 0o777, false},
		{"block device", fs.ModeDevice | 0o660, false},
	} {
		if got := isTerminal(fakeInfo{tc.mode}); got != tc.want {
			t.Errorf("%s (%v): isTerminal = %v, want %v", tc.name, tc.mode, got, tc.want)
		}
	}
}

func TestProgressByDefault(t *testing.T) {
	if progressByDefault(&bytes.Buffer{}) {
		t.Error("on for a writer that is not a file")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if progressByDefault(f) {
		t.Error("on for a regular file")
	}
	if !progressByDefault(&fakeStderr{mode: fs.ModeDevice | fs.ModeCharDevice}) {
		t.Error("off for a terminal")
	}
}

// On a terminal conform check shows its progress line unless
// --progress=false; elsewhere only with --progress.
func TestConformCheckProgressLine(t *testing.T) {
	tty := fs.ModeDevice | fs.ModeCharDevice
	for _, tc := range []struct {
		mode fs.FileMode
		flag []string
		want bool
	}{
		{tty, nil, true},
		{tty, []string{"--progress=false"}, false},
		{0o644, nil, false},
		{0o644, []string{"--progress"}, true},
	} {
		var out bytes.Buffer
		errb := &fakeStderr{mode: tc.mode}
		env := &Env{Stdout: &out, Stderr: errb, Getenv: func(string) string { return "" }}
		args := append([]string{"check", "--model", "mcp", "--warden"}, tc.flag...)
		if code, err := runConform(context.Background(), env, args); code != ExitOK || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s%s", args, code, err, out.String(), errb.String())
		}
		if got := strings.Contains(errb.String(), "states/s"); got != tc.want {
			t.Errorf("stderr %v, %v: progress line shown = %v, want %v:\n%q", tc.mode, tc.flag, got, tc.want, errb.String())
		}
	}
}
