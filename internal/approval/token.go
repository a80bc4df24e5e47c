package approval

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the admin token's file name in the data dir.
const TokenFile = "admin.token"

// EnsureToken returns the admin token stored in dir, creating it (mode 0600,
// 256 random bits) on first use. A token file readable by group or others is
// refused, as a key would be.
func EnsureToken(dir string) (string, error) {
	tok, _, err := LoadOrCreateToken(dir)
	return tok, err
}

// LoadOrCreateToken is EnsureToken, and also reports whether this call
// created the token (so that the gateway can show a new token once).
func LoadOrCreateToken(dir string) (token string, created bool, err error) {
	path := filepath.Join(dir, TokenFile)
	if tok, err := ReadToken(dir); err == nil {
		return tok, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	tok := rand.Text() + rand.Text()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	if _, err := f.WriteString(tok + "\n"); err != nil {
		return "", false, err
	}
	return tok, true, nil
}

// ReadToken reads the admin token from dir.
func ReadToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %o lets others read the admin token; chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
