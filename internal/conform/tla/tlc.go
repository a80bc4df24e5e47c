package tla

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// EnvJar names the variable that may point at tla2tools.jar.
const EnvJar = "TLA2TOOLS_JAR"

// WriteFiles writes m's module and one configuration per invariant into
// dir, and returns the module's path.
func WriteFiles(dir string, m *ir.Model, noAdversary bool) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var mod bytes.Buffer
	if err := Emit(&mod, m); err != nil {
		return "", err
	}
	path := filepath.Join(dir, ModuleName(m)+".tla")
	if err := os.WriteFile(path, mod.Bytes(), 0o644); err != nil {
		return "", err
	}
	for _, p := range m.Properties {
		cfg, err := Config(m, p.ID, noAdversary)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, ConfigName(p.ID)), []byte(cfg), 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}

// TLCResult is TLC's verdict on one invariant.
type TLCResult struct {
	Property string
	Status   string // "holds", "violated" or "error"
	States   int    // distinct states TLC found (-1 when it did not say)
	TraceLen int    // for violated: the number of actions in TLC's trace
	ExitCode int
	Output   string // TLC's output, for errors
}

var (
	distinctRe = regexp.MustCompile(`(\d+) distinct states found`)
	stateRe    = regexp.MustCompile(`(?m)^State (\d+):`)
)

// RunTLC checks every invariant of m with TLC from jar, each with its own
// configuration, in a scratch directory under dir. java must be on PATH
// (Java 11 or later). Exit codes follow TLC: 0 no error, 10..14 a
// violation, anything else an error.
func RunTLC(ctx context.Context, jar, dir string, m *ir.Model, noAdversary bool) ([]TLCResult, error) {
	if jar == "" {
		return nil, errors.New("no tla2tools.jar given (--tlc-jar or " + EnvJar + ")")
	}
	if _, err := os.Stat(jar); err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("TLC needs java (11 or later) on PATH")
	}
	module, err := WriteFiles(dir, m, noAdversary)
	if err != nil {
		return nil, err
	}
	var out []TLCResult
	for _, p := range m.Properties {
		meta, err := os.MkdirTemp(dir, "tlc-meta-")
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, java, "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC",
			"-workers", "auto", "-config", ConfigName(p.ID), "-metadir", meta, filepath.Base(module))
		cmd.Dir = dir
		text, runErr := cmd.CombinedOutput()
		os.RemoveAll(meta)
		r := TLCResult{Property: p.ID, States: -1, Output: string(text)}
		var exit *exec.ExitError
		switch {
		case runErr == nil:
			r.Status = "holds"
		case errors.As(runErr, &exit) && exit.ExitCode() >= 10 && exit.ExitCode() <= 14:
			r.Status, r.ExitCode = "violated", exit.ExitCode()
			if ms := stateRe.FindAllSubmatch(text, -1); len(ms) > 0 {
				n, _ := strconv.Atoi(string(ms[len(ms)-1][1]))
				r.TraceLen = n - 1
			}
		case errors.As(runErr, &exit):
			r.Status, r.ExitCode = "error", exit.ExitCode()
		default:
			return nil, fmt.Errorf("running TLC: %w", runErr)
		}
		if mm := distinctRe.FindSubmatch(text); mm != nil {
			r.States, _ = strconv.Atoi(string(mm[1]))
		}
		out = append(out, r)
	}
	return out, nil
}
