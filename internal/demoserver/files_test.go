package demoserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles writes files, named relative to dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sandbox lays out
//
//	base/outside/secret.txt         outside the sandbox
//	base/root/notes.txt             inside
//	base/root/sub/deep.txt
//	base/root/escape -> ../outside/secret.txt
//	base/root/outdir -> ../outside
//
// and returns base/root and the secret's path.
func sandbox(t *testing.T) (root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	secret = filepath.Join(outside, "secret.txt")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, base, map[string]string{
		"outside/secret.txt": "TOP SECRET",
		"root/notes.txt":     "hello from the sandbox",
		"root/sub/deep.txt":  "deep",
	})
	if err := os.Symlink("../outside/secret.txt", filepath.Join(root, "escape")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.Symlink("../outside", filepath.Join(root, "outdir")); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

func TestReadFile(t *testing.T) {
	root, secret := sandbox(t)
	writeFiles(t, root, map[string]string{
		"big.txt":    strings.Repeat("x", maxFileSize+1),
		"binary.dat": "\xff\xfe\x00",
	})
	cs := connect(t, Options{Root: root}, nil, revStateless)

	if got := wantOK(t, call(t, cs, "read_file", map[string]any{"path": "notes.txt"})); got != "hello from the sandbox" {
		t.Errorf("read_file notes.txt = %q", got)
	}
	if got := wantOK(t, call(t, cs, "read_file", map[string]any{"path": "sub/deep.txt"})); got != "deep" {
		t.Errorf("read_file sub/deep.txt = %q", got)
	}

	refused := []struct{ path, want string }{
		{"../outside/secret.txt", "leaves the sandbox"},
		{"sub/../../outside/secret.txt", "leaves the sandbox"},
		{secret, "absolute"},
		{"escape", "escapes"},            // symlink to a file outside
		{"outdir/secret.txt", "escapes"}, // through a symlinked directory
		{"missing.txt", "no such file"},
		{"sub", "not a regular file"},
		{"", "empty"},
		{"big.txt", "the limit is"},
		{"binary.dat", "not UTF-8"},
	}
	for _, tc := range refused {
		res := call(t, cs, "read_file", map[string]any{"path": tc.path})
		wantToolError(t, res, tc.want)
		if strings.Contains(text(res), "TOP SECRET") {
			t.Errorf("read_file %q leaked the secret: %q", tc.path, text(res))
		}
	}
}

func TestListDir(t *testing.T) {
	root, _ := sandbox(t)
	cs := connect(t, Options{Root: root}, nil, revStateless)

	for _, args := range []map[string]any{{}, {"path": "."}} {
		res := call(t, cs, "list_dir", args)
		wantOK(t, res)
		got := structured[listDirOutput](t, res).Entries
		want := []dirEntry{
			{Name: "escape", Type: "symlink"},
			{Name: "notes.txt", Type: "file", Size: int64(len("hello from the sandbox"))},
			{Name: "outdir", Type: "symlink"},
			{Name: "sub", Type: "dir"},
		}
		if !slices.Equal(got, want) {
			t.Errorf("list_dir %v = %+v, want %+v", args, got, want)
		}
		if !strings.Contains(text(res), "notes.txt") {
			t.Errorf("list_dir text %q lacks notes.txt", text(res))
		}
	}

	res := call(t, cs, "list_dir", map[string]any{"path": "sub"})
	if got := structured[listDirOutput](t, res).Entries; !slices.Equal(got, []dirEntry{{Name: "deep.txt", Type: "file", Size: 4}}) {
		t.Errorf("list_dir sub = %+v", got)
	}

	for _, tc := range []struct{ path, want string }{
		{"..", "leaves the sandbox"},
		{"/", "absolute"},
		{"outdir", "escapes"},
		{"notes.txt", "not a directory"},
	} {
		res := call(t, cs, "list_dir", map[string]any{"path": tc.path})
		wantToolError(t, res, tc.want)
		if strings.Contains(text(res), "secret.txt") {
			t.Errorf("list_dir %q listed outside the sandbox: %q", tc.path, text(res))
		}
	}
}

func TestWriteFile(t *testing.T) {
	root, secret := sandbox(t)
	cs := connect(t, Options{Root: root}, nil, revStateless)

	wantOK(t, call(t, cs, "write_file", map[string]any{"path": "new/dir/file.txt", "content": "written"}))
	if b, err := os.ReadFile(filepath.Join(root, "new", "dir", "file.txt")); err != nil || string(b) != "written" {
		t.Errorf("after write_file: %q, %v", b, err)
	}
	wantOK(t, call(t, cs, "write_file", map[string]any{"path": "notes.txt", "content": "replaced"}))
	if got := wantOK(t, call(t, cs, "read_file", map[string]any{"path": "notes.txt"})); got != "replaced" {
		t.Errorf("read back %q, want replaced", got)
	}

	res := call(t, cs, "write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("x", maxFileSize+1)})
	wantToolError(t, res, "the limit is")
	if _, err := os.Stat(filepath.Join(root, "big.txt")); err == nil {
		t.Errorf("write_file over the limit created the file")
	}

	outside := filepath.Dir(secret)
	for _, tc := range []struct{ path, want string }{
		{"../outside/planted.txt", "leaves the sandbox"},
		{filepath.Join(outside, "planted.txt"), "absolute"},
		{"outdir/planted.txt", "escapes"}, // through a symlinked directory
		{"escape", "escapes"},             // over a symlink to the secret
		{"", "empty"},
		{"sub", "is a directory"},
	} {
		res := call(t, cs, "write_file", map[string]any{"path": tc.path, "content": "pwned"})
		wantToolError(t, res, tc.want)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("outside the sandbox now holds %d entries, want only secret.txt", len(entries))
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOP SECRET" {
		t.Errorf("the file outside the sandbox now holds %q", b)
	}
}

func TestFileToolsWithoutRoot(t *testing.T) {
	cs := connect(t, Options{}, nil, revStateless)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "x"}},
		{"list_dir", map[string]any{}},
		{"write_file", map[string]any{"path": "x", "content": "y"}},
	} {
		wantToolError(t, call(t, cs, tc.tool, tc.args), "no sandbox root")
	}
}
