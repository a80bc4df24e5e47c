package zerotrust

// Strict decoding of token headers and claims, by hand rather than through
// encoding/json: the member names are few and fixed, and reflection was most
// of the cost of validation beyond the signature.
//
//	bytes ─► jsonrpc.Validate ─► one walk over the members ─► header / Claims
//	         (duplicates, UTF-8,  (exact names only; an unknown claim, a
//	          surrogates, size)    wrong type, a case variant: refused)
//
// The rules are those encoding/json with DisallowUnknownFields applied,
// without its case-insensitive matching: null leaves a member at its zero
// value, a string member must be a JSON string, a number member an integer
// that fits in 64 bits.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// validJSON refuses what strictJSON refuses before decoding: invalid JSON,
// duplicate members, invalid UTF-8, lone surrogates, more than maxTokenBytes.
func validJSON(data []byte) error {
	if err := jsonrpc.Validate(data, jsonrpc.Limits{MaxBytes: maxTokenBytes}); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
	}
	return nil
}

// eachMember calls fn with each member of data, a validated JSON object,
// until fn fails.
func eachMember(data []byte, what string, fn func(name string, raw []byte) error) error {
	var err error
	if !jsonrpc.Members(data, func(name string, raw []byte) {
		if err == nil {
			err = fn(name, raw)
		}
	}) {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	return err
}

func isNull(raw []byte) bool { return string(raw) == "null" }

// stringMember decodes a string member into dst; null leaves dst alone.
func stringMember(name string, raw []byte, dst *string) error {
	if isNull(raw) {
		return nil
	}
	s, ok := jsonrpc.String(raw)
	if !ok {
		return fmt.Errorf("%s is not a string", name)
	}
	*dst = s
	return nil
}

// intMember decodes an integer member into dst; null leaves dst alone.
// A fraction or an exponent is refused, as encoding/json refuses them for
// an integer field.
func intMember(name string, raw []byte, dst *int64) error {
	if isNull(raw) {
		return nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer of 64 bits", name)
	}
	*dst = n
	return nil
}

// decodeHeader decodes a token's protected header. Members other than alg,
// kid, typ, crit and b64 are ignored, unless their name differs from a known
// name only in case (someone meant it to count).
func decodeHeader(data []byte) (header, error) {
	var h header
	if err := validJSON(data); err != nil {
		return h, err
	}
	err := eachMember(data, "header", func(name string, raw []byte) error {
		switch name {
		case "alg":
			return stringMember(name, raw, &h.Alg)
		case "kid":
			return stringMember(name, raw, &h.Kid)
		case "typ":
			return stringMember(name, raw, &h.Typ)
		case "crit":
			h.Crit = true
		case "b64":
			h.B64 = true
		default:
			if err := caseVariant(name); err != nil {
				return err
			}
			if len(raw) > 0 && raw[0] == '{' {
				return exactNames(raw)
			}
		}
		return nil
	})
	return h, err
}

// caseVariant refuses a member name that equals a known name only when case
// is ignored.
func caseVariant(name string) error {
	for _, k := range knownNames {
		if name != k && strings.EqualFold(name, k) {
			return fmt.Errorf("member %q differs from %q only in case", name, k)
		}
	}
	return nil
}

// decodeClaimsJSON decodes a token's payload into c. Every member must be a
// claim warden knows, at every level.
func decodeClaimsJSON(data []byte, c *Claims) error {
	if err := validJSON(data); err != nil {
		return err
	}
	return eachMember(data, "claims", func(name string, raw []byte) error {
		switch name {
		case "iss":
			return stringMember(name, raw, &c.Issuer)
		case "aud":
			return stringMember(name, raw, &c.Audience)
		case "sub":
			return stringMember(name, raw, &c.Subject)
		case "iat":
			return intMember(name, raw, &c.IssuedAt)
		case "nbf":
			return intMember(name, raw, &c.NotBefore)
		case "exp":
			return intMember(name, raw, &c.Expiry)
		case "jti":
			return stringMember(name, raw, &c.ID)
		case "upstream":
			return stringMember(name, raw, &c.Upstream)
		case "tool":
			return stringMember(name, raw, &c.Tool)
		case "parameters_hash":
			return stringMember(name, raw, &c.ParametersHash)
		case "hash_alg":
			return stringMember(name, raw, &c.HashAlg)
		case "binding_mode":
			return stringMember(name, raw, &c.BindingMode)
		case "schema_hash":
			return stringMember(name, raw, &c.SchemaHash)
		case "session_hash":
			return stringMember(name, raw, &c.SessionHash)
		case "persona":
			return stringMember(name, raw, &c.Persona)
		case "classification":
			var n int64
			if err := intMember(name, raw, &n); err != nil {
				return err
			}
			c.Classification = int(n)
		case "cnf":
			if isNull(raw) {
				return nil
			}
			cnf := &Confirmation{}
			if err := eachMember(raw, "cnf", func(name string, raw []byte) error {
				if name != "jkt" {
					return fmt.Errorf("unknown claim cnf.%s", name)
				}
				return stringMember("cnf.jkt", raw, &cnf.JKT)
			}); err != nil {
				return err
			}
			c.Confirmation = cnf
		case "txn":
			if isNull(raw) {
				return nil
			}
			return eachMember(raw, "txn", func(name string, raw []byte) error {
				switch name {
				case "id":
					return stringMember("txn.id", raw, &c.Transaction.ID)
				case "timestamp":
					return stringMember("txn.timestamp", raw, &c.Transaction.Timestamp)
				}
				return fmt.Errorf("unknown claim txn.%s", name)
			})
		default:
			return fmt.Errorf("unknown claim %q", name)
		}
		return nil
	})
}
