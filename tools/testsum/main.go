// Command testsum turns the `go test -json` stream into short, readable
// output and a final count.
//
//	go test -json ./... 2>&1 | testsum [-label L] [-save FILE] [-v]
//	testsum -total FILE...
//
// In stream mode it prints each package's result line ("ok", "FAIL",
// "?"), build errors, and the full output of every failing test (with -v,
// every line), every output line that starts with "REPORT " (a table a
// test wants shown even when it passes, such as the conformance
// comparison), then the skipped tests with their reasons, the failed tests,
// and a line "[L: ]N passed, M failed, K skipped". Lines that are not JSON
// (for example the go command's own stderr) are passed through. With -save
// the raw stream is also written to FILE.
//
// In total mode it re-reads saved streams and prints the failures of all of
// them (each prefixed with its file's base name, minus ".json") and one plain
// final line "N passed, M failed".
//
// Passed, failed and skipped count tests and subtests, like the
// "--- PASS"/"--- FAIL"/"--- SKIP" lines of `go test -v`. A package that
// fails without a failing test (build error, panic outside a test, timeout,
// TestMain) counts as one failure. The exit status is 1 when anything failed,
// 2 on usage or I/O errors.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testsum", flag.ContinueOnError)
	fs.SetOutput(stderr)
	label := fs.String("label", "", "prefix for the summary line")
	save := fs.String("save", "", "also write the raw stream to `file`")
	verbose := fs.Bool("v", false, "print all test output, not only failures")
	total := fs.Bool("total", false, "summarize saved streams given as arguments")
	if err := fs.Parse(args); err != nil {
		return 2
	}

	if *total {
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "testsum: -total needs at least one file")
			return 2
		}
		var sum summary
		for _, name := range fs.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(stderr, "testsum:", err)
				return 2
			}
			s := newSummary(io.Discard, false)
			err = s.read(f)
			f.Close()
			if err != nil {
				fmt.Fprintf(stderr, "testsum: %s: %v\n", name, err)
				return 2
			}
			sum.add(strings.TrimSuffix(filepath.Base(name), ".json")+": ", s)
		}
		sum.printFailures(stdout)
		fmt.Fprintf(stdout, "%d passed, %d failed\n", sum.passed, sum.failed)
		return sum.exitCode()
	}

	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "testsum: unexpected arguments (the stream is read from stdin)")
		return 2
	}
	in := stdin
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(stderr, "testsum:", err)
			return 2
		}
		defer f.Close()
		in = io.TeeReader(stdin, f)
	}
	s := newSummary(stdout, *verbose)
	if err := s.read(in); err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 2
	}
	s.printSkips(stdout)
	s.printFailures(stdout)
	prefix := ""
	if *label != "" {
		prefix = *label + ": "
	}
	fmt.Fprintf(stdout, "%s%d passed, %d failed, %d skipped\n", prefix, s.passed, s.failed, s.skipped)
	return s.exitCode()
}

// reportPrefix starts an output line that is shown whatever the test's
// result, as it arrives.
const reportPrefix = "REPORT "

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string // package fail caused by a build failure
}

type key struct{ pkg, test string }

type summary struct {
	out     io.Writer
	verbose bool

	passed, failed, skipped int
	failures                []string // "pkg TestName" or "pkg (package)"
	skips                   []string // "pkg TestName: reason"

	buf         map[key][]string // output of tests (and packages) not yet finished
	running     map[key]bool
	failedTests map[string]int // package -> failed tests in it
}

func newSummary(out io.Writer, verbose bool) *summary {
	return &summary{
		out:         out,
		verbose:     verbose,
		buf:         make(map[key][]string),
		running:     make(map[key]bool),
		failedTests: make(map[string]int),
	}
}

// add adds o's counts to s, and o's failures prefixed with prefix.
func (s *summary) add(prefix string, o *summary) {
	s.passed += o.passed
	s.failed += o.failed
	s.skipped += o.skipped
	for _, f := range o.failures {
		s.failures = append(s.failures, prefix+f)
	}
}

func (s *summary) exitCode() int {
	if s.failed > 0 {
		return 1
	}
	return 0
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(s.out, "%s\n", line)
			continue
		}
		s.handle(e)
	}
	return sc.Err()
}

func (s *summary) handle(e event) {
	if e.Action == "build-output" {
		fmt.Fprint(s.out, e.Output)
		return
	}
	if e.Action == "build-fail" {
		return // reported again as the package's fail event
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "run":
		s.running[k] = true
	case "output":
		if s.verbose || strings.HasPrefix(e.Output, reportPrefix) {
			fmt.Fprint(s.out, e.Output)
			return
		}
		s.buf[k] = append(s.buf[k], e.Output)
	case "pass", "skip", "fail":
		if e.Test == "" {
			s.endPackage(e)
			return
		}
		delete(s.running, k)
		out := s.buf[k]
		delete(s.buf, k)
		switch e.Action {
		case "pass":
			s.passed++
		case "skip":
			s.skipped++
			s.skips = append(s.skips, e.Package+" "+e.Test+skipReason(out))
		case "fail":
			s.failed++
			s.failedTests[e.Package]++
			s.failures = append(s.failures, e.Package+" "+e.Test)
			s.print(out)
		}
	}
}

// endPackage handles a package's final event: tests still running then were
// cut short (panic, timeout) and count as failed.
func (s *summary) endPackage(e event) {
	for k := range s.running {
		if k.pkg != e.Package {
			continue
		}
		delete(s.running, k)
		if e.Action == "fail" {
			s.failed++
			s.failedTests[e.Package]++
			s.failures = append(s.failures, e.Package+" "+k.test+" (did not finish)")
			s.print(s.buf[k])
		}
		delete(s.buf, k)
	}
	k := key{e.Package, ""}
	out := s.buf[k]
	delete(s.buf, k)
	if e.Action == "fail" {
		if s.failedTests[e.Package] == 0 {
			s.failed++
			what := " (package)"
			if e.FailedBuild != "" {
				what = " (build failed)"
			}
			s.failures = append(s.failures, e.Package+what)
		}
		s.print(out)
		if e.FailedBuild != "" && !containsFAIL(out) {
			fmt.Fprintf(s.out, "FAIL\t%s [build failed]\n", e.Package)
		}
		return
	}
	// A passing or test-less package: show only go test's result line.
	for _, l := range out {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
			fmt.Fprint(s.out, l)
		}
	}
}

// skipReason returns ": " and the last message a skipped test logged.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ": "); ok { // drop "file_test.go:12: "
			l = msg
		}
		return ": " + l
	}
	return ""
}

func containsFAIL(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "FAIL") {
			return true
		}
	}
	return false
}

func (s *summary) print(lines []string) {
	for _, l := range lines {
		fmt.Fprint(s.out, l)
	}
}

// printSkips lists the skipped tests, so that a test quietly skipping in CI
// is seen.
func (s *summary) printSkips(w io.Writer) {
	if len(s.skips) == 0 {
		return
	}
	fmt.Fprintln(w, "skipped:")
	for _, f := range s.skips {
		fmt.Fprintln(w, "  "+f)
	}
}

func (s *summary) printFailures(w io.Writer) {
	if len(s.failures) == 0 {
		return
	}
	fmt.Fprintln(w, "failed:")
	for _, f := range s.failures {
		fmt.Fprintln(w, "  "+f)
	}
}
