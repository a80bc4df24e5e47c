package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/cli"
	"github.com/agentwarden/warden/internal/demo"
)

// TestDemoProveAgreesWithConformCheck compares the demo's Prove part with
// `warden conform check --model mcp`, bare and --warden: each principle's
// column is ✗ when any of its properties is violated there, and the
// leads-to property P5_hold_decided has its own line with its verdicts.
func TestDemoProveAgreesWithConformCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Options{Out: &out})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}
	account := out.String()
	for _, side := range []struct {
		row  string // the matrix row's label
		args []string
	}{
		{"MCP  ", []string{"conform", "check", "--model", "mcp"}},
		{"MCP + warden", []string{"conform", "check", "--model", "mcp", "--warden"}},
	} {
		principles, byProperty := conformCheck(t, side.args...)
		row := strings.Fields(strings.TrimPrefix(strings.TrimSpace(lineOf(account, side.row, "✓")), strings.TrimSpace(side.row)))
		if len(row) != len(principles.order) {
			t.Fatalf("matrix row %q has %d columns, conform check %d principles %v", side.row, len(row), len(principles.order), principles.order)
		}
		for i, p := range principles.order {
			want := "✓"
			if principles.violated[p] {
				want = "✗"
			}
			if row[i] != want {
				t.Errorf("%s %s: the demo shows %s; conform check: %v", side.row, p, row[i], principles.results[p])
			}
		}
		if byProperty["P5_hold_decided"] != "holds" {
			t.Errorf("%s: conform check says P5_hold_decided %q", side.args, byProperty["P5_hold_decided"])
		}
	}
	leadsTo := lineOf(account, "P5_hold_decided, leads-to under weak fairness", "")
	verdicts := lineOf(account, "~>", "MCP")
	if leadsTo == "" || !strings.HasSuffix(verdicts, "MCP ✓   MCP + warden ✓") {
		t.Errorf("the leads-to property's lines are %q and %q:\n%s", leadsTo, verdicts, account)
	}
}

// checked are conform check's principles, in order, and what each of
// their properties gave.
type checked struct {
	order    []string
	violated map[string]bool
	results  map[string][]string
}

// conformCheck runs warden conform check and reads its rows: model,
// property, principle, class, result, ...
func conformCheck(t *testing.T, args ...string) (checked, map[string]string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
		Getenv: func(string) string { return "" }})
	if code != cli.ExitOK && code != 1 {
		t.Fatalf("warden %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	c := checked{violated: map[string]bool{}, results: map[string][]string{}}
	byProperty := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "mcp") {
			continue
		}
		property, principle, result := f[1], f[2], f[4]
		if _, ok := c.results[principle]; !ok {
			c.order = append(c.order, principle)
		}
		c.results[principle] = append(c.results[principle], property+" "+result)
		c.violated[principle] = c.violated[principle] || result == "violated"
		byProperty[property] = result
	}
	if len(c.order) == 0 {
		t.Fatalf("warden %s printed no rows:\n%s", strings.Join(args, " "), out.String())
	}
	return c, byProperty
}
