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
