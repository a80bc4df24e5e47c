package policy

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

var rules = []Rule{
	{Name: "destructive", Level: 2, When: `has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true`},
	{Name: "big-transfer", Level: 1, When: `tool.name == "transfer_funds" && args.amount > 10000`},
	{Name: "payments", Level: 4, When: `server == "pay"`},
	{Name: "robots", Level: 3, When: `subject.startsWith("bot:")`},
}

func TestClassify(t *testing.T) {
	c, err := NewClassifier(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		in    Input
		level int
		rule  string
		tier  int
	}{
		{"small transfer: only the server rule", Input{Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{"amount":50}`)}, 4, "payments", 1},
		{"big transfer wins over the server rule, whatever the order",
			Input{Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{"amount":10000.5}`)}, 1, "big-transfer", 3},
		{"annotation from tools/list", Input{Server: "files", Tool: "rm",
			Annotations: map[string]any{"destructiveHint": true}}, 2, "destructive", 2},
		{"no annotation seen", Input{Server: "files", Tool: "rm"}, 0, "", 0},
		{"subject", Input{Server: "files", Tool: "ls", Subject: "bot:nightly"}, 3, "robots", 2},
		{"nothing matches", Input{Server: "files", Tool: "ls", Subject: "alice"}, 0, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Classify(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Level != tc.level || res.Rule != tc.rule || res.Tier() != tc.tier {
				t.Fatalf("got level %d (%q) tier %d, want %d (%q) tier %d", res.Level, res.Rule, res.Tier(), tc.level, tc.rule, tc.tier)
			}
		})
	}
}

// A rule that cannot be evaluated fails the classification: the gateway
// must not treat an unreadable call as unclassified.
func TestClassifyFailsSecure(t *testing.T) {
	c, err := NewClassifier(rules)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]Input{
		"missing argument": {Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{"to":"x"}`)},
		"amount a string":  {Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{"amount":"lots"}`)},
		"not JSON":         {Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{`)},
	} {
		if _, err := c.Classify(in); err == nil || !strings.Contains(err.Error(), `"big-transfer"`) {
			t.Errorf("%s: err %v, want the failing rule named", name, err)
		}
	}
	// A rule more sensitive than the failing one still decides.
	c2, _ := NewClassifier([]Rule{{Level: 1, When: `tool.name == "wipe"`}, {Level: 3, When: `args.x > 1`}})
	if res, err := c2.Classify(Input{Tool: "wipe"}); err != nil || res.Level != 1 {
		t.Fatalf("got %+v %v", res, err)
	}
}

func TestBadRules(t *testing.T) {
	_, err := NewClassifier([]Rule{
		{Level: 1, When: `tool.name ==`},
		{Level: 0, When: `true`},
		{Level: 2, When: `server + "x"`},
		{Level: 3, When: ``},
		{Level: 3, When: `nosuchvar == 1`},
	})
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var re *RuleError
		if !errors.As(e, &re) {
			t.Fatalf("%v is not a RuleError", e)
		}
		got = append(got, re.Error()[:strings.Index(re.Error(), ":")])
	}
	want := []string{"[0].when", "[1].level", "[2].when", "[3].when", "[4].when"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("errors at %v, want %v:\n%v", got, want, err)
	}
	if !strings.Contains(err.Error(), "must be a bool") || !strings.Contains(err.Error(), "undeclared reference") {
		t.Errorf("messages do not say what is wrong:\n%v", err)
	}
}

// One classifier serves every session at once.
func TestClassifyConcurrent(t *testing.T) {
	c, _ := NewClassifier(rules)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			amount := "50"
			want := 4
			if i%2 == 0 {
				amount, want = "20000", 1
			}
			for range 50 {
				res, err := c.Classify(Input{Server: "pay", Tool: "transfer_funds", Arguments: []byte(`{"amount":` + amount + `}`)})
				if err != nil || res.Level != want {
					t.Errorf("got %+v %v, want level %d", res, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestTierOf(t *testing.T) {
	// The standard: Tier 1 for classes 4-5, Tier 2 for 2-3, Tier 3 for 1.
	for level, tier := range map[int]int{0: 0, 1: 3, 2: 2, 3: 2, 4: 1, 5: 1} {
		if got := TierOf(level); got != tier {
			t.Errorf("TierOf(%d) = %d, want %d", level, got, tier)
		}
	}
}
