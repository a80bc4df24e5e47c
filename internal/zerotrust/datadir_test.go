package zerotrust

import (
	"path/filepath"
	"testing"
)

func TestDataDir(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		goos, home string
		want       string
	}{
		{map[string]string{"WARDEN_DATA_DIR": "/srv/w", "XDG_DATA_HOME": "/x"}, "linux", "/home/a", "/srv/w"},
		{map[string]string{"XDG_DATA_HOME": "/x"}, "linux", "/home/a", "/x/warden"},
		{map[string]string{"XDG_DATA_HOME": "relative"}, "linux", "/home/a", "/home/a/.local/share/warden"},
		{nil, "linux", "/home/a", "/home/a/.local/share/warden"},
		{nil, "darwin", "/Users/a", "/Users/a/Library/Application Support/warden"},
		{nil, "linux", "", ""},
		{map[string]string{"LocalAppData": `C:\Users\a\AppData\Local`}, "windows", `C:\Users\a`, filepath.Join(`C:\Users\a\AppData\Local`, "warden")},
	} {
		got := dataDir(func(k string) string { return tc.env[k] }, tc.goos, tc.home)
		if got != filepath.FromSlash(tc.want) && got != tc.want {
			t.Errorf("dataDir(%v, %s, %s) = %q, want %q", tc.env, tc.goos, tc.home, got, tc.want)
		}
	}
}
