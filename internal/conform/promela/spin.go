package promela

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
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// SpinResult is what one SPIN run reports.
type SpinResult struct {
	Violated bool
	Stored   int           // "states, stored": the model's states plus the initial control state
	TraceLen int           // for Violated: actions in the trail (the initial check step is not one)
	Elapsed  time.Duration // the pan run alone, without spin -a and the C compiler
	// From pan's "Stats on memory usage" block (pan's megabytes are MiB;
	// the figures are printed to 0.001 MiB, so about 1 KiB):
	//
	//	StateBytes  "equivalent memory usage for states (stored*(State-vector + overhead))"
	//	TotalBytes  "total actual memory usage": states, hash table (-w24: 128 MiB) and stacks
	//
	// Both are 0 when pan printed no such line.
	StateBytes float64
	TotalBytes float64
	Output     string
}

// SpinAvailable reports whether spin and a C compiler are on PATH.
func SpinAvailable() bool {
	_, e1 := exec.LookPath("spin")
	_, e2 := exec.LookPath("gcc")
	return e1 == nil && e2 == nil
}

var (
	storedRE   = regexp.MustCompile(`(\d+) states, stored`)
	errorsRE   = regexp.MustCompile(`errors: (\d+)`)
	stateMemRE = regexp.MustCompile(`(?m)^\s*([\d.]+)\s+equivalent memory usage for states`)
	totalMemRE = regexp.MustCompile(`(?m)^\s*([\d.]+)\s+total actual memory usage`)
)

// RunSpin emits m into dir (optimize compiles pan with -O2), and checks property (empty: explore only) with
// SPIN. A leads-to property is an acceptance-cycle search over its never
// claim (liveness.go; TraceLen then counts the trail's steps, prefix and
// cycle, which is not a shortest lasso). An invariant is checked in
// breadth-first mode, which gives shortest counterexamples:
//
//	spin -o2 -DCHECK_<property> -a model.pml     (-o2 keeps variables only
//	gcc -O0 -DBFS -DSAFETY -DNOREDUCE pan.c       properties read, so stored
//	./pan                                        states match the IR's)
func RunSpin(ctx context.Context, dir string, m *ir.Model, property string, optimize bool) (*SpinResult, error) {
	gccOpt := "-O0" // many small models: compile time dominates
	if optimize {
		gccOpt = "-O2" // to measure SPIN at its fastest
	}
	var src bytes.Buffer
	if err := Emit(&src, m); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "model.pml"), src.Bytes(), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-o2"}
	gccArgs := []string{gccOpt, "-DBFS", "-DSAFETY", "-DNOREDUCE", "-w", "-o", "pan", "pan.c"}
	panArgs := []string{"-m1000000"}
	if pr, ok := m.Property(property); ok && pr.Kind == ir.LeadsTo {
		// An acceptance-cycle search (nested depth-first) over the
		// property's never claim; see liveness.go.
		macro, err := ClaimMacro(m, property)
		if err != nil {
			return nil, err
		}
		args = append(args, "-D"+macro)
		gccArgs = []string{gccOpt, "-DNOREDUCE", "-w", "-o", "pan", "pan.c"}
		panArgs = []string{"-a", "-m1000000"}
	} else if property != "" {
		macro, err := CheckMacro(m, property)
		if err != nil {
			return nil, err
		}
		args = append(args, "-D"+macro)
	}
	args = append(args, "-a", "model.pml")
	if out, err := run(ctx, dir, "spin", args...); err != nil {
		return nil, fmt.Errorf("spin -a: %v\n%s", err, out)
	}
	if out, err := run(ctx, dir, "gcc", gccArgs...); err != nil {
		return nil, fmt.Errorf("gcc pan.c: %v\n%s", err, out)
	}
	_ = os.Remove(filepath.Join(dir, "model.pml.trail"))
	start := time.Now()
	out, err := run(ctx, dir, "./pan", panArgs...)
	elapsed := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("pan: %v\n%s", err, out)
	}
	r, err := parsePan(out)
	if err != nil {
		return nil, err
	}
	r.Elapsed = elapsed
	if r.Violated {
		trail, err := os.ReadFile(filepath.Join(dir, "model.pml.trail"))
		if err != nil {
			return nil, fmt.Errorf("pan reported an error but wrote no trail: %v", err)
		}
		steps := 0
		for _, line := range strings.Split(string(trail), "\n") {
			if line != "" && !strings.HasPrefix(line, "-") {
				steps++
			}
		}
		r.TraceLen = steps - 1 // the first step is the initial check
	}
	return r, nil
}

const mebibyte = 1 << 20 // pan's "Megabytes"

// parsePan reads the verdict, the stored states and the memory figures from
// pan's output.
func parsePan(out string) (*SpinResult, error) {
	r := &SpinResult{Output: out}
	mm := storedRE.FindStringSubmatch(out)
	em := errorsRE.FindStringSubmatch(out)
	if mm == nil || em == nil {
		return nil, fmt.Errorf("pan: unexpected output\n%s", out)
	}
	r.Stored, _ = strconv.Atoi(mm[1])
	r.Violated = em[1] != "0"
	if m := stateMemRE.FindStringSubmatch(out); m != nil {
		mb, _ := strconv.ParseFloat(m[1], 64)
		r.StateBytes = mb * mebibyte
	}
	if m := totalMemRE.FindStringSubmatch(out); m != nil {
		mb, _ := strconv.ParseFloat(m[1], 64)
		r.TotalBytes = mb * mebibyte
	}
	return r, nil
}

func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && name == "./pan" {
		err = nil // pan exits non-zero when it finds an error
	}
	return out.String(), err
}
