// Package zerotrust implements the Zero-Trust Tool Invocation Standard
// (v1.3.0) inside warden: parameter hashing now; bound tokens, DPoP, client
// signatures, tiers and approvals as they land.
//
// The parameter hash binds an approval to the exact arguments of a tool
// call (Axiom 1, INV-3):
//
//	parameters_hash = lowercase hex( SHA-256( JCS( arguments ) ) )
//
// JCS is RFC 8785: keys sorted by UTF-16 code units, no whitespace, numbers
// in ECMAScript form, strings escaped only where JSON requires. Absent
// arguments hash as {}. Before canonicalizing, warden refuses what would make
// two parsers disagree about which arguments were approved: duplicate keys
// (a first-wins upstream would run other arguments), invalid UTF-8, lone
// surrogates, and numbers whose value lies beyond ±2^53, however they are
// spelled (9007199254740993, 1e20, 9.007199254740993e15): JCS reads numbers
// as doubles, which beyond 2^53 cannot hold every integer, so two different
// amounts could share one hash. Send such values as strings.
package zerotrust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/gowebpki/jcs"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// maxExactInteger is 2^53: every integer up to it has an exact double.
var maxExactInteger = new(big.Float).SetInt64(1 << 53)

// Canonicalize returns the RFC 8785 form of a tool call's arguments (the raw
// JSON of params.arguments; nil or empty means absent, which is {}). The
// arguments must be a JSON object.
func Canonicalize(arguments []byte) ([]byte, error) {
	if len(bytes.TrimSpace(arguments)) == 0 {
		return []byte("{}"), nil
	}
	if err := jsonrpc.Validate(arguments, jsonrpc.Limits{}); err != nil {
		return nil, err
	}
	if b := bytes.TrimSpace(arguments); b[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	if err := checkNumbers(arguments); err != nil {
		return nil, err
	}
	// Most arguments arrive canonical already (clients that sort their
	// keys, and warden itself forwards canonical bytes): recognising that
	// costs one scan instead of a parse and a rewrite.
	if b := bytes.TrimSpace(arguments); alreadyCanonical(b) {
		return bytes.Clone(b), nil
	}
	out, err := jcs.Transform(arguments)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing arguments: %w", err)
	}
	return out, nil
}

// ParamsHash returns the parameters_hash of arguments and the canonical
// bytes it hashed, which are what the gateway forwards.
func ParamsHash(arguments []byte) (hash string, canonical []byte, err error) {
	canonical, err = Canonicalize(arguments)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), canonical, nil
}

// checkNumbers refuses numbers whose exact value lies beyond ±2^53. data is
// valid JSON (jsonrpc.Validate passed), so a byte scan that skips strings
// finds every number token.
func checkNumbers(data []byte) error {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(data) && isNumberByte(data[j]) {
				j++
			}
			if err := checkNumber(data[i:j]); err != nil {
				return err
			}
			i = j - 1
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// checkNumber checks one number token. Without an exponent, fifteen digits
// cannot exceed 2^53 (which has sixteen); only longer numbers, and numbers
// with an exponent, are compared exactly.
func checkNumber(n []byte) error {
	digits, exp := 0, false
	for _, c := range n {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == 'e' || c == 'E':
			exp = true
		}
	}
	if !exp && digits <= 15 {
		return nil
	}
	// The exact decimal value, not its nearest double: 9007199254740993
	// must not pass as 2^53.
	v, _, err := big.ParseFloat(string(n), 10, 256, big.ToNearestEven)
	if err != nil || v.IsInf() || new(big.Float).Abs(v).Cmp(maxExactInteger) > 0 {
		return fmt.Errorf("number %s is beyond ±2^53 and would lose precision in the hash; send it as a string", n)
	}
	return nil
}

// SchemaHash is the hash a hybrid token (binding mode C) binds of the
// server's side of a call: lowercase hex SHA-256 of the RFC 8785 form of the
// tool's inputSchema, as the server's tools/list defines it. An absent
// schema hashes as {}.
func SchemaHash(inputSchema []byte) (string, error) {
	hash, _, err := ParamsHash(inputSchema)
	return hash, err
}

// isHexSHA256 reports whether s is 64 lowercase hex digits.
func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// alreadyCanonical reports whether data, JSON that jsonrpc.Validate
// accepted, is certainly its own RFC 8785 form. It answers true only for a
// conservative subset, and false whenever in doubt (the caller then
// canonicalizes):
//
//   - no whitespace between tokens;
//   - object member names of ASCII without escapes, in strictly increasing
//     byte order (for ASCII, the UTF-16 order JCS sorts by);
//   - strings whose only escapes are the ones JCS writes: \" \\ \b \t \n \f \r
//     (JCS writes every other character as itself; Validate already refused
//     raw control characters and invalid UTF-8);
//   - numbers that are integers of at most 15 digits other than -0 (exact
//     doubles, which ECMAScript prints as these same digits);
//   - true, false, null.
func alreadyCanonical(data []byte) bool {
	c := canonScan{b: data}
	end := c.value(0, 0)
	return end == len(data)
}

// canonScan walks validated JSON for alreadyCanonical. Each method returns
// the index just after what it read, or -1 when the input is not (certainly)
// canonical.
type canonScan struct{ b []byte }

// maxCanonDepth bounds the recursion; deeper input is simply canonicalized.
const maxCanonDepth = 32

func (c *canonScan) value(i, depth int) int {
	if i >= len(c.b) || depth > maxCanonDepth {
		return -1
	}
	switch ch := c.b[i]; {
	case ch == '{':
		return c.object(i, depth+1)
	case ch == '[':
		return c.array(i, depth+1)
	case ch == '"':
		return c.str(i)
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.integer(i)
	case ch == 't':
		return c.literal(i, "true")
	case ch == 'f':
		return c.literal(i, "false")
	case ch == 'n':
		return c.literal(i, "null")
	}
	return -1
}

func (c *canonScan) object(i, depth int) int {
	i++ // {
	if i < len(c.b) && c.b[i] == '}' {
		return i + 1
	}
	var prev []byte
	for first := true; ; first = false {
		name, end := c.name(i)
		if end < 0 || !first && bytes.Compare(prev, name) >= 0 {
			return -1
		}
		prev = name
		if end >= len(c.b) || c.b[end] != ':' {
			return -1
		}
		if i = c.value(end+1, depth); i < 0 || i >= len(c.b) {
			return -1
		}
		switch c.b[i] {
		case ',':
			i++
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// name reads a member name that is printable ASCII without escapes, and
// returns it without its quotes.
func (c *canonScan) name(i int) ([]byte, int) {
	if i >= len(c.b) || c.b[i] != '"' {
		return nil, -1
	}
	for j := i + 1; j < len(c.b); j++ {
		switch ch := c.b[j]; {
		case ch == '"':
			return c.b[i+1 : j], j + 1
		case ch == '\\' || ch >= 0x80:
			return nil, -1
		}
	}
	return nil, -1
}

func (c *canonScan) array(i, depth int) int {
	i++ // [
	if i < len(c.b) && c.b[i] == ']' {
		return i + 1
	}
	for {
		if i = c.value(i, depth); i < 0 || i >= len(c.b) {
			return -1
		}
		switch c.b[i] {
		case ',':
			i++
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

func (c *canonScan) str(i int) int {
	for j := i + 1; j < len(c.b); j++ {
		switch c.b[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(c.b) {
				return -1
			}
			switch c.b[j+1] {
			case '"', '\\', 'b', 't', 'n', 'f', 'r':
				j++
			default: // \/ and \u are never how JCS writes a character here
				return -1
			}
		}
	}
	return -1
}

func (c *canonScan) integer(i int) int {
	j := i
	if c.b[j] == '-' {
		j++
	}
	start := j
	for j < len(c.b) && c.b[j] >= '0' && c.b[j] <= '9' {
		j++
	}
	digits := j - start
	switch {
	case digits == 0 || digits > 15:
		return -1
	case c.b[start] == '0' && (digits > 1 || start > i): // leading zero, or -0
		return -1
	case j < len(c.b) && (c.b[j] == '.' || c.b[j] == 'e' || c.b[j] == 'E'):
		return -1
	}
	return j
}

func (c *canonScan) literal(i int, lit string) int {
	if !bytes.HasPrefix(c.b[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
}
