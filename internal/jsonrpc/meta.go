package jsonrpc

import "strings"

// WithoutWardenMeta returns m without the members of params._meta in
// warden's namespace (WardenNamespace), and without _meta itself if nothing
// else was in it; every other member keeps its exact bytes and order. It
// returns m itself when m.WardenMeta is false. The copy keeps m's Header and
// Related.
//
// The decoder has already refused a member that folds to the namespace
// without being spelled exactly, so an exact prefix test finds every one.
func (m *Message) WithoutWardenMeta() *Message {
	if !m.WardenMeta {
		return m
	}
	params := make([]byte, 0, len(m.Params))
	params = append(params, '{')
	n := 0
	add := func(name string, value []byte) {
		if n > 0 {
			params = append(params, ',')
		}
		n++
		params = appendString(params, name)
		params = append(params, ':')
		params = append(params, value...)
	}
	Members(m.Params, func(name string, value []byte) {
		if name != "_meta" {
			add(name, value)
			return
		}
		if meta := WithoutPrefixed(value, WardenNamespace); meta != nil {
			add(name, meta)
		}
	})
	params = append(params, '}')
	var c *Message
	if m.Kind == KindRequest {
		c = NewRequest(m.ID, m.Method, params)
	} else {
		c = NewNotification(m.Method, params)
	}
	c.Header, c.Related = m.Header, m.Related
	return c
}

// WithoutPrefixed returns obj, a validated JSON object, without the members
// whose names (escapes decoded) start with prefix, every other member with
// its exact bytes and in its order; nil if no member is left.
func WithoutPrefixed(obj []byte, prefix string) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	n := 0
	Members(obj, func(key string, v []byte) {
		if strings.HasPrefix(key, prefix) {
			return
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendString(out, key)
		out = append(out, ':')
		out = append(out, v...)
	})
	if n == 0 {
		return nil
	}
	return append(out, '}')
}
