package jsonrpc

import "encoding/json"

// decodeLenient is a TEMPORARY stand-in so that other packages compile while
// the strict decoder is written. It is replaced by strict.go.
func decodeLenient(data []byte, lim Limits) (*Message, error) {
	var w struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, &Error{Code: CodeParseError, Message: err.Error()}
	}
	m := &Message{Raw: data, Method: w.Method, Params: w.Params, Result: w.Result, Error: w.Error}
	if len(w.ID) > 0 && string(w.ID) != "null" {
		m.ID = IDFromRaw(w.ID)
	}
	switch {
	case w.Method != "" && m.ID.IsValid():
		m.Kind = KindRequest
	case w.Method != "":
		m.Kind = KindNotification
	default:
		m.Kind = KindResponse
	}
	return m, nil
}

func lookupLenient(value []byte, path ...string) ([]byte, bool) {
	for _, k := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(value, &obj) != nil {
			return nil, false
		}
		v, ok := obj[k]
		if !ok {
			return nil, false
		}
		value = v
	}
	return value, true
}

func stringLenient(raw []byte) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
