package jsonrpc

// Typed reading of protocol data: the one way the gateway decodes what a
// peer sent into Go values.
//
//	data ─► Validate ─────────────► go-json-experiment/json ─► v
//	        the wire rules: UTF-8,   member names matched to
//	        surrogates, duplicate    fields exactly (case and
//	        names, depth, size       all), duplicates refused
//
// encoding/json matches a member name to a struct field case-insensitively,
// under Unicode simple folding: {"Description": "x"} and {"deſcription": "x"}
// (U+017F) both fill a field tagged "description", while Lookup, the pin
// and security stages and most peers see no description at all. A gateway
// that reads one member one way in one place and another way in the next
// can be steered by the difference, so protocol data is read either with
// Lookup and Members or with Unmarshal, never with encoding/json.

import (
	encjson "encoding/json"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalOptions configure Unmarshal. The zero value is the setting for
// protocol data: names matched exactly, unknown members ignored (protocols
// grow), numbers in interface values as float64, as with encoding/json.
type UnmarshalOptions struct {
	// Limits bound data as Validate's do. Unlike Validate's, a zero field
	// adds no bound: MaxBytes 0 accepts data of any size, and MaxDepth 0
	// accepts the nesting go-json-experiment accepts (10000 levels). Most
	// protocol data is part of a message Decode has already bounded with
	// the gateway's configured limits, and a value Decode accepted must not
	// be refused here: a caller that skips what it cannot read would then
	// skip it unchecked. Set both when data comes from anywhere else.
	Limits Limits

	// RejectUnknownMembers refuses an object member that names no field of
	// the struct it is decoded into. A member whose name differs from a
	// field's only in case is unknown too.
	RejectUnknownMembers bool

	// UseNumber decodes a number into an interface value (any) as an
	// encoding/json Number holding its text, as encoding/json's
	// Decoder.UseNumber does, instead of a float64 that may round it.
	UseNumber bool
}

// maxNesting is the depth go-json-experiment refuses beyond, and so the
// depth UnmarshalOptions' zero MaxDepth stands for.
const maxNesting = 10000

var (
	// exactNames states go-json-experiment's default: no case folding.
	exactNames    = json.MatchCaseInsensitiveNames(false)
	rejectUnknown = json.RejectUnknownMembers(true)
	numbersAsText = json.WithUnmarshalers(json.UnmarshalFromFunc(unmarshalNumberText))
)

// Unmarshal decodes data, JSON a peer sent, into v (a non-nil pointer) with
// the zero UnmarshalOptions. See UnmarshalOptions.Unmarshal.
func Unmarshal(data []byte, v any) error { return UnmarshalOptions{}.Unmarshal(data, v) }

// Unmarshal checks data with the rules Validate applies, then decodes it
// into v (a non-nil pointer) with github.com/go-json-experiment/json:
//
//   - a member fills the struct field whose JSON name is exactly its own,
//     escapes decoded; "Description" or "deſcription" fill no field tagged
//     "description", and are ignored as unknown members;
//   - fields of type encoding/json.RawMessage (or jsontext.Value) receive
//     the member's bytes as they are in data;
//   - a JSON null leaves the zero value (go-json-experiment's rule), and a
//     value of the wrong JSON type for its field is an error.
//
// A problem Validate finds is returned as the *Error Validate returns; a
// decoding problem as go-json-experiment's error. v may be partly filled
// when there is an error.
func (o UnmarshalOptions) Unmarshal(data []byte, v any) error {
	if err := Validate(data, o.limits(len(data))); err != nil {
		return err
	}
	opts := make([]json.Options, 0, 3)
	opts = append(opts, exactNames)
	if o.RejectUnknownMembers {
		opts = append(opts, rejectUnknown)
	}
	if o.UseNumber {
		opts = append(opts, numbersAsText)
	}
	return json.Unmarshal(data, v, opts...)
}

// limits returns the Limits Validate applies to data of n bytes.
func (o UnmarshalOptions) limits(n int) Limits {
	l := o.Limits
	if l.MaxBytes <= 0 {
		l.MaxBytes = max(n, 1)
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = maxNesting
	}
	return l
}

// unmarshalNumberText decodes a number into an interface value as an
// encoding/json Number; anything else is left to the default decoding
// (whose nested interface values come back here).
func unmarshalNumberText(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return json.SkipFunc
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*v = encjson.Number(raw)
	return nil
}
