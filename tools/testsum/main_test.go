package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stream is a trimmed `go test -json` run: one passing package with a
// passing, a skipped and a failing test (with a subtest), one package whose
// binary panicked inside a test, one package that failed to build, and one
// without test files.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestSkip"}
{"Action":"output","Package":"ex/a","Test":"TestSkip","Output":"    a_test.go:9: run make deps\n"}
{"Action":"skip","Package":"ex/a","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestBad"}
{"Action":"run","Package":"ex/a","Test":"TestBad/sub"}
{"Action":"output","Package":"ex/a","Test":"TestBad/sub","Output":"    a_test.go:20: got 1, want 2\n"}
{"Action":"output","Package":"ex/a","Test":"TestBad/sub","Output":"    --- FAIL: TestBad/sub (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestBad/sub","Elapsed":0}
{"Action":"output","Package":"ex/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"output","Package":"ex/a","Output":"FAIL\tex/a\t0.01s\n"}
{"Action":"fail","Package":"ex/a","Elapsed":0.01}
{"Action":"start","Package":"ex/b"}
{"Action":"run","Package":"ex/b","Test":"TestPanics"}
{"Action":"output","Package":"ex/b","Test":"TestPanics","Output":"panic: boom\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t0.02s\n"}
{"Action":"fail","Package":"ex/b","Elapsed":0.02}
{"ImportPath":"ex/c","Action":"build-output","Output":"ex/c/c.go:3:1: syntax error\n"}
{"ImportPath":"ex/c","Action":"build-fail"}
{"Action":"start","Package":"ex/c"}
{"Action":"fail","Package":"ex/c","Elapsed":0,"FailedBuild":"ex/c"}
not json: go: warning
{"Action":"start","Package":"ex/d"}
{"Action":"output","Package":"ex/d","Output":"?   \tex/d\t[no test files]\n"}
{"Action":"skip","Package":"ex/d","Elapsed":0}
{"Action":"start","Package":"ex/e"}
{"Action":"run","Package":"ex/e","Test":"TestFine"}
{"Action":"output","Package":"ex/e","Test":"TestFine","Output":"secret noise\n"}
{"Action":"output","Package":"ex/e","Test":"TestFine","Output":"REPORT scenario | direct | warden\n"}
{"Action":"pass","Package":"ex/e","Test":"TestFine","Elapsed":0}
{"Action":"output","Package":"ex/e","Output":"PASS\n"}
{"Action":"output","Package":"ex/e","Output":"ok  \tex/e\t0.01s\n"}
{"Action":"pass","Package":"ex/e","Elapsed":0.01}
`

func TestStream(t *testing.T) {
	var out, errOut bytes.Buffer
	save := filepath.Join(t.TempDir(), "run.json")
	code := run([]string{"-label", "unit", "-save", save}, strings.NewReader(stream), &out, &errOut)
	if code != 1 {
		t.Errorf("exit code = %d, want 1; stderr:\n%s", code, errOut.String())
	}
	got := out.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if last, want := lines[len(lines)-1], "unit: 2 passed, 4 failed, 1 skipped"; last != want {
		t.Errorf("last line = %q, want %q\nfull output:\n%s", last, want, got)
	}
	for _, want := range []string{
		"a_test.go:20: got 1, want 2", // failing subtest's output
		"--- FAIL: TestBad (0.00s)",
		"FAIL\tex/a\t0.01s",
		"panic: boom", // output of a test cut short
		"ex/c/c.go:3:1: syntax error",
		"FAIL\tex/c [build failed]",
		"not json: go: warning",
		"?   \tex/d\t[no test files]",
		"ok  \tex/e\t0.01s",
		"REPORT scenario | direct | warden\n", // a passing test's report line
		"skipped:\n  ex/a TestSkip: run make deps\n",
		"  ex/a TestBad/sub\n  ex/a TestBad\n  ex/b TestPanics (did not finish)\n  ex/c (build failed)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\nfull output:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"secret noise", "=== RUN   TestOK", "a_test.go:9"} {
		if strings.Contains(got, notWant) {
			t.Errorf("output of a passing or skipped test leaked: %q", notWant)
		}
	}
	saved, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "REPORT "); n != 1 {
		t.Errorf("the report line is shown %d times, want once", n)
	}
	if string(saved) != stream {
		t.Errorf("-save wrote %d bytes, want the %d-byte stream unchanged", len(saved), len(stream))
	}

	// Total mode over the same run twice: counts add up, plain last line.
	out.Reset()
	code = run([]string{"-total", save, save}, nil, &out, &errOut)
	if code != 1 {
		t.Errorf("-total exit code = %d, want 1", code)
	}
	if !strings.HasSuffix(out.String(), "  run: ex/c (build failed)\n4 passed, 8 failed\n") {
		t.Errorf("-total output ends wrongly:\n%s", out.String())
	}
}

func TestAllPassExitsZero(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`
	var out bytes.Buffer
	if code := run(nil, strings.NewReader(in), &out, &out); code != 0 {
		t.Errorf("exit code = %d, want 0; output:\n%s", code, out.String())
	}
	if want := "ok  \tp\t0.1s\n1 passed, 0 failed, 0 skipped\n"; out.String() != want {
		t.Errorf("output = %q, want %q", out.String(), want)
	}
}

func TestUsageErrors(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"-total"}, nil, &out, &out); code != 2 {
		t.Errorf("-total without files: exit code = %d, want 2", code)
	}
	if code := run([]string{"-total", filepath.Join(t.TempDir(), "missing.json")}, nil, &out, &out); code != 2 {
		t.Errorf("-total with a missing file: exit code = %d, want 2", code)
	}
}
