package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse or Validate panic, and that
// every failure is a non-empty *Problems whose entries say something.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad/*.yaml")
	examples, _ := filepath.Glob("../../examples/*.yaml")
	for _, file := range append(seeds, examples...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\ngateway: {upstreams: [{name: a, command: [a], env: {A: \"${env:B}\"}}]}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("\xef\xbb\xbfversion: 1\n"))
	f.Add([]byte("? ? ? a\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			checkProblems(t, err)
			if cfg != nil {
				t.Fatal("Parse returned a Config with problems")
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			checkProblems(t, err)
			return
		}
		for _, u := range cfg.Gateway.Upstreams {
			if tr := u.Transport(); tr != TransportStdio && tr != TransportHTTP {
				t.Fatalf("valid upstream %q has transport %q", u.Name, tr)
			}
		}
	})
}

func checkProblems(t *testing.T, err error) {
	t.Helper()
	var ps *Problems
	if !errors.As(err, &ps) || len(*ps) == 0 {
		t.Fatalf("error %T %v is not a non-empty *Problems", err, err)
	}
	for _, p := range *ps {
		if p.Message == "" || p.Line < 0 || p.Column < 0 {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}
