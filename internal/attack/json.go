package attack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agentwarden/warden/internal/oatf"
)

// maxJSONDepth bounds the nesting of JSON decoded from peers.
const maxJSONDepth = 128

// DecodeJSON decodes one JSON value into an ordered oatf.Value, keeping the
// key order of objects (extractors render non-scalars in source key order).
// Integers that fit an int64 become Int, other numbers Float.
func DecodeJSON(data []byte) (*oatf.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("json: trailing data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (*oatf.Value, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("json: nesting deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := oatf.NewMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				if m.Has(k) {
					return nil, fmt.Errorf("json: duplicate key %q", k)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m.Set(k, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			s := oatf.NewSeq()
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				s.Items = append(s.Items, v)
			}
			_, err := dec.Token()
			return s, err
		}
		return nil, fmt.Errorf("json: unexpected %v", t)
	case string:
		return oatf.NewString(t), nil
	case bool:
		return oatf.NewBool(t), nil
	case nil:
		return oatf.NewNull(), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return oatf.NewInt(i), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("json: number %s: %w", t, err)
		}
		return oatf.NewFloat(f), nil
	}
	return nil, fmt.Errorf("json: unexpected token %v", tok)
}

// encodeJSON renders v as compact JSON in key order; nil is "null".
func encodeJSON(v *oatf.Value) []byte {
	if v == nil {
		return []byte("null")
	}
	return []byte(oatf.CompactJSON(v))
}

// decodeOrNull decodes raw JSON, turning absent or undecodable input into nil.
func decodeOrNull(raw []byte) *oatf.Value {
	if len(raw) == 0 {
		return nil
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil
	}
	return v
}

// items returns a list's items; nil for anything else.
func items(v *oatf.Value) []*oatf.Value {
	if v == nil || v.Kind != oatf.Seq {
		return nil
	}
	return v.Items
}

// pairs returns an object's members; nil for anything else.
func pairs(v *oatf.Value) []*oatf.Member {
	if v == nil || v.Kind != oatf.Map {
		return nil
	}
	return v.Pairs
}
