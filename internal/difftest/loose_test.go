package difftest

// How the oracle reads the upstreams' input: JSON as a lenient reader
// sees it (duplicates kept, names folded), and parameters_hash.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// wardenNamespace is the prefix of warden's own params._meta members.
const wardenNamespace = "io.agentwarden/"

// paramsHash is the parameters_hash of arguments as a handler received
// them: hex SHA-256 of their JCS form, absent arguments counting as {}.
// Arguments that are not an object have none ("", as in the audit log).
func paramsHash(args json.RawMessage) string {
	s := strings.TrimSpace(string(args))
	switch {
	case s == "" || s == "null":
		s = "{}"
	case !strings.HasPrefix(s, "{"):
		return ""
	}
	canonical, err := jcs.Transform([]byte(s))
	if err != nil {
		return "unhashable: " + err.Error()
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// hasWardenPrefix reports whether name starts with io.agentwarden/ in any
// case, folded as encoding/json folds (ſ is s, the Kelvin sign is k).
func hasWardenPrefix(name string) bool {
	r := []rune(name)
	n := len([]rune(wardenNamespace))
	return len(r) >= n && strings.EqualFold(string(r[:n]), wardenNamespace)
}

// wardenMetaMembers returns the names of the io.agentwarden/ members of
// params._meta in a message as an upstream read it: every member whose
// name folds to params, then to _meta, duplicates included.
func wardenMetaMembers(line string) []string {
	root, err := parseLoose(line)
	if err != nil {
		return nil
	}
	msgs := []*node{root}
	if root.array {
		msgs = root.elems
	}
	var names []string
	for _, msg := range msgs {
		for _, p := range msg.members {
			if !strings.EqualFold(p.name, "params") {
				continue
			}
			for _, meta := range p.value.members {
				if !strings.EqualFold(meta.name, "_meta") {
					continue
				}
				for _, mem := range meta.value.members {
					if hasWardenPrefix(mem.name) {
						names = append(names, mem.name)
					}
				}
			}
		}
	}
	return names
}

// needsAnswer reports whether JSON-RPC asks for an answer to msg: it is
// not JSON, an empty batch, or has a member that a reader might take for
// its id.
func needsAnswer(msg string) bool {
	root, err := parseLoose(msg)
	if err != nil {
		return true
	}
	msgs := []*node{root}
	if root.array {
		if len(root.elems) == 0 {
			return true
		}
		msgs = root.elems
	}
	for _, m := range msgs {
		if !m.object {
			return true
		}
		for _, mem := range m.members {
			if strings.EqualFold(mem.name, "id") {
				return true
			}
		}
	}
	return false
}

// node is JSON as a lenient reader might see it: every member of an
// object kept, in order, duplicates included.
type node struct {
	object, array bool
	members       []member
	elems         []*node
}

type member struct {
	name  string
	value *node
}

// parseLoose parses one JSON value, keeping duplicate members.
func parseLoose(s string) (*node, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	return parseNode(dec)
}

func parseNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return &node{}, nil
	}
	n := &node{object: d == '{', array: d == '['}
	for dec.More() {
		var name string
		if n.object {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, _ = k.(string)
		}
		v, err := parseNode(dec)
		if err != nil {
			return nil, err
		}
		if n.object {
			n.members = append(n.members, member{name, v})
		} else {
			n.elems = append(n.elems, v)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	return n, nil
}

// TestLooseReading holds the oracle's readers to what they must see, so
// that a check cannot pass for want of reading.
func TestLooseReading(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`{"params":{"_meta":{"io.agentwarden/token":"t"}}}`, []string{"io.agentwarden/token"}},
		{`{"PARAMS":{"_META":{"IO.AGENTWARDEN/TOKEN":"t"}}}`, []string{"IO.AGENTWARDEN/TOKEN"}},
		{`{"paramſ":{"_meta":{"io.agentwarden/to\u212aen":"t","ıo.agentwarden/x":1}}}`, []string{"io.agentwarden/to\u212aen"}},
		{`{"params":{"_meta":{"x":1},"_meta":{"io.agentwarden\/token":"t"}}}`, []string{"io.agentwarden/token"}},
		{`[{"params":{"_meta":{"io.agentwarden/a":1}}},{"params":{"_meta":{"io.agentwarden/b":1}}}]`, []string{"io.agentwarden/a", "io.agentwarden/b"}},
		{`{"params":{"arguments":{"io.agentwarden/token":"t"},"_meta":{"x":{"io.agentwarden/token":"t"}}}}`, nil},
		{`{"params":{"_ｍeta":{"io.agentwarden/token":"t"}}}`, nil},
	} {
		got := wardenMetaMembers(c.line)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("wardenMetaMembers(%s) = %q, want %q", c.line, got, c.want)
		}
	}
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:  true,
		`{"jsonrpc":"2.0","ID":1,"method":"ping"}`:  true,
		`{"jsonrpc":"2.0","method":"ping"}`:         false,
		`{"jsonrpc":"2.0","ıd":1,"method":"ping"}`:  false,
		`[{"jsonrpc":"2.0","method":"a"},{"id":2}]`: true,
		`[]`: true,
		`{"jsonrpc":"2.0","id":1,"method":"ping"`: true,
		`[{"jsonrpc":"2.0","method":"a"}]`:        false,
	} {
		if got := needsAnswer(msg); got != want {
			t.Errorf("needsAnswer(%s) = %v, want %v", msg, got, want)
		}
	}
	// The value of warden token hash --params '{"amount":100}' and {}.
	for args, want := range map[string]string{
		`{"amount":1e2}`:  hashOf(`{"amount":100}`),
		`{ "b":1,"a":2 }`: hashOf(`{"a":2,"b":1}`),
		`null`:            hashOf(`{}`),
		`[1]`:             "",
		`{"amount":-0}`:   hashOf(`{"amount":0}`),
	} {
		if got := paramsHash(json.RawMessage(args)); got != want {
			t.Errorf("paramsHash(%s) = %s, want %s", args, got, want)
		}
	}
}

func hashOf(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])
}
