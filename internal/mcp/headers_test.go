package mcp

import (
	"net/http"
	"strings"
	"testing"
)

const schema = `{"type":"object","properties":{
  "region":{"type":"string","x-mcp-header":"Region"},
  "count":{"type":"integer","x-mcp-header":"Count"},
  "dry":{"type":"boolean","x-mcp-header":"Dry"},
  "opts":{"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"}}},
  "note":{"type":"string"}}}`

func TestParamBindingsFindsNestedAnnotations(t *testing.T) {
	got := map[string]string{}
	for _, b := range ParamBindings([]byte(schema)) {
		got[b.Header] = strings.Join(b.Path, ".")
	}
	want := map[string]string{"Region": "region", "Count": "count", "Dry": "dry", "Tenant": "opts.tenant"}
	if len(got) != len(want) {
		t.Fatalf("bindings %v, want %v", got, want)
	}
	for h, p := range want {
		if got[h] != p {
			t.Errorf("header %s: path %q, want %q", h, got[h], p)
		}
	}
}

func TestCheckParamHeaders(t *testing.T) {
	bindings := ParamBindings([]byte(schema))
	params := `{"name":"deploy","arguments":{"region":"eu-west","count":3,"dry":false,"opts":{"tenant":"ünï"},"note":"x"}}`
	good := http.Header{}
	good.Set("Mcp-Param-Region", "eu-west")
	good.Set("Mcp-Param-Count", "3")
	good.Set("Mcp-Param-Dry", "false")
	good.Set("Mcp-Param-Tenant", "=?base64?w7xuw68=?=") // "ünï"
	if err := CheckParamHeaders(good, []byte(params), bindings); err != nil {
		t.Fatalf("matching headers refused: %v", err)
	}

	cases := []struct {
		name, header, value, want string
	}{
		{"mismatched string", "Mcp-Param-Region", "us-east", "does not match"},
		{"mismatched integer", "Mcp-Param-Count", "4", "does not match"},
		{"integer spelled as float matches", "Mcp-Param-Count", "3.0", ""},
		{"raw non-ASCII", "Mcp-Param-Tenant", "ünï", "invalid character"},
		{"bad base64", "Mcp-Param-Tenant", "=?base64?***?=", "invalid Base64"},
		{"missing header", "Mcp-Param-Region", "", "missing Mcp-Param-Region"},
	}
	for _, tc := range cases {
		h := good.Clone()
		if tc.value == "" {
			h.Del(tc.header)
		} else {
			h.Set(tc.header, tc.value)
		}
		err := CheckParamHeaders(h, []byte(params), bindings)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}

	// An empty header is the empty string, not a missing header.
	h := good.Clone()
	h["Mcp-Param-Region"] = []string{""}
	if err := CheckParamHeaders(h, []byte(strings.Replace(params, `"eu-west"`, `""`, 1)), bindings); err != nil {
		t.Errorf("an empty header for an empty argument refused: %v", err)
	}
	if err := CheckParamHeaders(h, []byte(params), bindings); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("an empty header for a non-empty argument: %v, want a mismatch", err)
	}

	// A header for an argument the body does not have is a mismatch too,
	// even empty.
	h = good.Clone()
	if err := CheckParamHeaders(h, []byte(`{"name":"deploy","arguments":{"count":3,"dry":false,"opts":{"tenant":"ünï"}}}`), bindings); err == nil ||
		!strings.Contains(err.Error(), "unexpected Mcp-Param-Region") {
		t.Errorf("header for an absent argument: %v", err)
	}
	h["Mcp-Param-Region"] = []string{""}
	if err := CheckParamHeaders(h, []byte(`{"name":"deploy","arguments":{"region":null,"count":3,"dry":false,"opts":{"tenant":"ünï"}}}`), bindings); err == nil ||
		!strings.Contains(err.Error(), "unexpected Mcp-Param-Region") {
		t.Errorf("empty header for a null argument: %v", err)
	}
}
