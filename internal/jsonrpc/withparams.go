package jsonrpc

// WithParams returns a request with m's id, method, Header, Related and
// WardenMeta whose params are params, without decoding it again: params
// must be JSON the strict decoder accepts, made from m's own params member
// by member (as telemetry.InjectMeta rewrites _meta's trace context), and
// must not add or remove a member of warden's namespace. Raw is the form
// NewRequest writes, and the result is the Message that decoding it gives
// (TestWithParamsIsNewRequests). It panics if m is not a request.
func (m *Message) WithParams(params []byte) *Message {
	if m.Kind != KindRequest {
		panic("jsonrpc: WithParams on a message that is not a request")
	}
	b := make([]byte, 0, 64+len(m.ID.raw)+len(m.Method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	c := &Message{Kind: KindRequest, ID: m.ID, Method: m.Method, Header: m.Header, Related: m.Related,
		WardenMeta: m.WardenMeta, idStart: len(b)}
	b = append(b, m.ID.raw...)
	c.idEnd = len(b)
	b = append(b, `,"method":`...)
	b = appendString(b, m.Method)
	if params != nil {
		b = append(b, `,"params":`...)
		c.paramsOff = len(b)
		b = append(b, params...)
		c.Params = b[c.paramsOff:len(b):len(b)]
	}
	c.Raw = append(b, '}')
	return c
}
