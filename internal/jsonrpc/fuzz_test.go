package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the seed corpus in testdata/fuzz from the test tables")

// fuzzSeeds are the inputs of the test tables, for FuzzDecode.
func fuzzSeeds() map[string][]byte {
	seeds := map[string][]byte{}
	for _, c := range badCases {
		data, _ := c.input()
		seeds["bad-"+c.name] = data
	}
	for _, c := range goodCases {
		seeds["good-"+c.name] = []byte(c.in)
	}
	return seeds
}

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// TestSeedCorpus keeps testdata/fuzz/FuzzDecode in step with the tables, so
// that plain `go test` runs every table input through the fuzz properties.
func TestSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	files := map[string]string{}
	for name, data := range fuzzSeeds() {
		file := filepath.Join(dir, "seed-"+unsafeName.ReplaceAllString(strings.ToLower(name), "-"))
		if other, dup := files[file]; dup {
			t.Fatalf("cases %q and %q share the seed file %s", name, other, file)
		}
		files[file] = name
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale: run go test -run TestSeedCorpus -update", file)
		}
	}
	// Seeds of cases that are gone; other files (fuzz crashers) stay.
	old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
	for _, file := range old {
		if _, ok := files[file]; ok {
			continue
		}
		if *update {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s has no test case any more: run go test -run TestSeedCorpus -update", file)
	}
}

func FuzzDecode(f *testing.F) {
	for _, data := range fuzzSeeds() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, Limits{})
		checkAgainstReference(t, data, m, err)

		msgs, isBatch, berr := DecodeBatch(data, Limits{}, true)
		if berr == nil && !isBatch {
			if err != nil || msgs[0].Method != m.Method || msgs[0].ID != m.ID {
				t.Fatalf("DecodeBatch and Decode disagree on a single message: %v", err)
			}
		}
		if berr == nil && isBatch {
			if err == nil {
				t.Fatalf("Decode accepted a batch")
			}
			for _, m := range msgs {
				checkAgainstReference(t, m.Raw, m, nil)
			}
		}
		if berr != nil {
			checkWireError(t, data, berr)
		}
	})
}

// checkAgainstReference checks one Decode result against encoding/json used
// strictly.
func checkAgainstReference(t *testing.T, data []byte, m *Message, err error) {
	t.Helper()
	if err != nil {
		checkWireError(t, data, err)
		return
	}
	if !json.Valid(data) || !utf8.Valid(data) {
		t.Fatalf("accepted invalid JSON %q", data)
	}
	// What is forwarded is one line with nothing around the object: stdio
	// peers frame by LF, and go-sdk ends the connection on anything but a
	// line break after a message.
	if bytes.ContainsAny(m.Raw, "\r\n") || len(m.Raw) == 0 || m.Raw[0] != '{' || m.Raw[len(m.Raw)-1] != '}' {
		t.Fatalf("Raw %q is not one object on one line", m.Raw)
	}
	if refHasDuplicates(data) {
		t.Fatalf("accepted duplicate keys in %q", data)
	}

	// Every top-level member must be one of JSON-RPC's, exactly.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		t.Fatalf("accepted, but not an object for encoding/json: %v", err)
	}
	for k := range members {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			t.Fatalf("accepted member %q", k)
		}
	}
	var ref struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("accepted, but the strict reference fails: %v", err)
	}
	if ref.JSONRPC != "2.0" || ref.Method != m.Method ||
		!bytes.Equal(ref.Params, m.Params) || !bytes.Equal(ref.Result, m.Result) {
		t.Fatalf("reference %+v, decoded %+v", ref, m)
	}
	if m.ID.IsValid() && !sameJSON(ref.ID, []byte(m.ID.Raw())) {
		t.Fatalf("reference id %s, decoded %s", ref.ID, m.ID)
	}
	if (ref.Error == nil) != (m.Error == nil) ||
		m.Error != nil && (m.Error.Code != ref.Error.Code || m.Error.Message != ref.Error.Message || !bytes.Equal(m.Error.Data, ref.Error.Data)) {
		t.Fatalf("reference error %+v, decoded %+v", ref.Error, m.Error)
	}

	// Decoding what was accepted gives the same message.
	again, err := Decode(m.Raw, Limits{})
	if err != nil || again.Kind != m.Kind || again.ID != m.ID || again.Method != m.Method ||
		!bytes.Equal(again.Params, m.Params) || !bytes.Equal(again.Result, m.Result) {
		t.Fatalf("Decode(Raw) differs: %v", err)
	}
	if got := PeekID(m.Raw); got != m.ID {
		t.Fatalf("PeekID %s, Decode %s", got, m.ID)
	}
	if m.ID.IsValid() {
		c := m.WithID(StringID("renumbered"))
		again, err := Decode(c.Raw, Limits{})
		if err != nil || again.ID != c.ID || !bytes.Equal(again.Params, m.Params) || !bytes.Equal(again.Result, m.Result) {
			t.Fatalf("WithID gives %q: %v", c.Raw, err)
		}
	}

	// Lookup finds each member of params as encoding/json does.
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) == nil {
		for k, v := range params {
			if got, ok := Lookup(m.Params, k); !ok || !bytes.Equal(got, v) {
				t.Fatalf("Lookup(params, %q) = %s, %v; want %s", k, got, ok, v)
			}
		}
	}
}

// sameJSON reports whether a and b are the same JSON value for encoding/json
// (numbers compared as text).
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&va) == nil && db.Decode(&vb) == nil && reflect.DeepEqual(va, vb)
}

// checkWireError checks a rejection: a wire *Error, and a parse error
// exactly when encoding/json also finds the input not JSON.
func checkWireError(t *testing.T, data []byte, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T", err)
	}
	var d Detail
	if json.Unmarshal(e.Data, &d) != nil || d.Stage != StageWire || d.Rule == "" {
		t.Fatalf("error data %s", e.Data)
	}
	if e.Code != CodeParseError && e.Code != CodeInvalidRequest {
		t.Fatalf("code %d", e.Code)
	}
	valid := json.Valid(data)
	if d.Rule == RuleSyntax && valid {
		t.Fatalf("syntax error %q on JSON that encoding/json accepts", e.Message)
	}
	if !valid && e.Code != CodeParseError {
		t.Fatalf("%d %s on input that is not JSON", e.Code, d.Rule)
	}
	if d.Offset < 0 || d.Offset > len(data) {
		t.Fatalf("offset %d outside the input", d.Offset)
	}
}

// refHasDuplicates reports whether some object in data has the same member
// twice, as encoding/json decodes member names.
func refHasDuplicates(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type object struct {
		names   map[string]bool
		wantKey bool
	}
	var stack []*object // nil for arrays
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*object)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil {
					top.wantKey = false
				}
				stack = append(stack, &object{names: map[string]bool{}, wantKey: true})
			case '[':
				if top != nil {
					top.wantKey = false
				}
				stack = append(stack, nil)
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top != nil && top.wantKey {
				if top.names[v] {
					return true
				}
				top.names[v] = true
				top.wantKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

func TestRefHasDuplicates(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1,"b":{"a":1}}`:               false,
		`{"a":1,"a":2}`:                     true,
		`{"a":{"b":1},"c":[{"b":1,"b":2}]}`: true,
		`{"a":"a","b":"b"}`:                 false,
		`{"a":1,"\u0061":2}`:                true,
		`[{"x":[1,"x"],"y":{"x":1}}]`:       false,
	} {
		if got := refHasDuplicates([]byte(in)); got != want {
			t.Errorf("refHasDuplicates(%s) = %v", in, got)
		}
	}
}

// strictValid reports whether data is one JSON value for the strict scanner.
func strictValid(data []byte) bool {
	s := scanner{data: data, maxDepth: 1000}
	if _, err := s.value(); err != nil {
		return false
	}
	return s.end() == nil
}

func FuzzLookup(f *testing.F) {
	f.Add([]byte(lookupDoc), "name")
	f.Add([]byte(lookupDoc), "été")
	f.Add([]byte(lookupDoc), "arguments")
	f.Add([]byte(`{"a\"b":1,"a\\":"\u00e9"}`), `a"b`)
	f.Add([]byte(`{"\ud83d\ude00":"x","k":[{"k":1}]}`), "😀")
	f.Add([]byte(`{"a":"\"}","b":2}`), "b")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		got, ok := Lookup(data, key) // must not panic on anything
		String(data)
		PeekID(data)
		if !strictValid(data) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			if ok {
				t.Fatalf("Lookup found %q in a non-object", key)
			}
			return
		}
		want, present := obj[key]
		if ok != present || !bytes.Equal(got, want) {
			t.Fatalf("Lookup(%q) = %s, %v; encoding/json finds %s, %v", key, got, ok, want, present)
		}
		seen := 0
		Members(data, func(name string, raw []byte) {
			seen++
			if v, ok := obj[name]; !ok || !bytes.Equal(v, raw) {
				t.Fatalf("Members gives %q = %s; encoding/json has %s, %v", name, raw, v, ok)
			}
		})
		if seen != len(obj) {
			t.Fatalf("Members gives %d members, encoding/json %d", seen, len(obj))
		}
		for k, v := range obj {
			var ref string
			s, ok := String(v)
			if json.Unmarshal(v, &ref) == nil {
				if !ok || s != ref {
					t.Fatalf("String(%s) = %q, %v; want %q", v, s, ok, ref)
				}
			} else if ok {
				t.Fatalf("String(%s) = %q for a non-string", v, s)
			}
			if got, ok := Lookup(data, k); !ok || !bytes.Equal(got, v) {
				t.Fatalf("Lookup(%q) = %s, %v; want %s", k, got, ok, v)
			}
		}
	})
}
