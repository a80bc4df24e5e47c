package zerotrust

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultDataDir returns the directory where warden keeps its state (signing
// keys under keys/), or "" when no home directory is known. In order:
// $WARDEN_DATA_DIR; $XDG_DATA_HOME/warden when XDG_DATA_HOME is an absolute
// path (not on Windows); then the platform's per-user data directory:
//
//	Linux and other Unix   ~/.local/share/warden
//	macOS                  ~/Library/Application Support/warden
//	Windows                %LocalAppData%\warden
//
// Reading never creates the directory; writers create it with mode 0700.
func DefaultDataDir() string {
	return DataDirFrom(os.Getenv)
}

// DataDirFrom is DefaultDataDir with a caller-supplied environment, so a
// command can resolve the directory from its own Env.
func DataDirFrom(getenv func(string) string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	if h := getenv("HOME"); h != "" && runtime.GOOS != "windows" {
		home = h
	}
	return dataDir(getenv, runtime.GOOS, home)
}

// dataDir is the platform logic of DefaultDataDir.
func dataDir(getenv func(string) string, goos, home string) string {
	if d := getenv("WARDEN_DATA_DIR"); d != "" {
		return d
	}
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "warden")
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, "AppData", "Local", "warden")
	}
	// The XDG spec says relative paths are invalid and must be ignored.
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "warden")
	}
	if home == "" {
		return ""
	}
	if goos == "darwin" || goos == "ios" {
		return filepath.Join(home, "Library", "Application Support", "warden")
	}
	return filepath.Join(home, ".local", "share", "warden")
}

// KeysDir is where the key ring of dataDir lives.
func KeysDir(dataDir string) string { return filepath.Join(dataDir, "keys") }

// ensurePrivateDir creates dir (and its parents) with mode 0700 if it does
// not exist. Called only by writers.
func ensurePrivateDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("no data directory: set WARDEN_DATA_DIR or pass --data-dir")
	}
	return os.MkdirAll(dir, 0o700)
}
