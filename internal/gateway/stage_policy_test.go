package gateway

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

type permitAll struct{}

func (permitAll) Permits(string) (bool, string) { return true, "" }

// The tool-policy stage computes the look-alike key of a called name once,
// not on every call (issue 22: the key was the stage's whole cost), and
// still refuses a look-alike on every call.
func TestToolPolicyComputesACalledNamesKeyOnce(t *testing.T) {
	computed := 0
	defer func(f func(string) string) { computeKey = f }(computeKey)
	computeKey = func(name string) string { computed++; return toolKey(name) }

	names := toolNames{}
	names.add("memo_probe_transfer")
	p := ToolPolicy{List: permitAll{}, Names: names}
	check := func(tool string) *Denial {
		params := `{"name":` + strconv.Quote(tool) + `}`
		msg, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`), jsonrpc.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		c, d := newCall(msg, "up", "")
		if d != nil {
			t.Fatal(d)
		}
		return p.Check(context.Background(), c)
	}
	for i := range 3 {
		if d := check("memo_probe_other"); d != nil {
			t.Fatalf("call %d refused: %v", i, d.Reason)
		}
		if d := check("Memo_Probe_Transfer"); d == nil || d.Rule != deny.RuleToolNameVariant {
			t.Fatalf("call %d of a look-alike: %v, want rule %s", i, d, deny.RuleToolNameVariant)
		}
	}
	if computed != 2 {
		t.Errorf("the keys of 2 names were computed %d times over 6 calls, want 2", computed)
	}

	long := strings.Repeat("x", maxMemoNameSize+1)
	computed = 0
	for range 2 {
		check(long)
	}
	if computed != 2 {
		t.Errorf("a name over %d bytes: key computed %d times over 2 calls, want 2 (not kept)", maxMemoNameSize, computed)
	}
	for i := range maxMemoNames + 10 {
		calledKeys.key("memo_fill_" + strconv.Itoa(i))
	}
	n := calledKeys.len()
	if n > maxMemoNames {
		t.Errorf("the memo holds %d names, want at most %d", n, maxMemoNames)
	}
}

// Concurrent misses fill the memo up to its bound and no further, and
// every caller gets the name's own key, memoized or not.
func TestKeyMemoConcurrentFill(t *testing.T) {
	var memo keyMemo
	const workers, names = 8, 1000 // 8000 names, about twice the bound
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				// Half the names are shared between workers, so stores race.
				name := "fill_" + strconv.Itoa(i%2*w) + "_" + strconv.Itoa(i)
				if got, want := memo.key(name), toolKey(name); got != want {
					errs <- name + ": " + got + ", want " + want
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := memo.len(); n != maxMemoNames {
		t.Errorf("after %d distinct names the memo holds %d, want exactly its bound %d", workers*names/2+names/2, n, maxMemoNames)
	}
	if n := memo.n.Load(); n != maxMemoNames {
		t.Errorf("the memo's reservation count is %d, want %d: a slot leaked or was lost", n, maxMemoNames)
	}
}
