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
		meta := make([]byte, 0, len(value))
		meta = append(meta, '{')
		k := 0
		Members(value, func(key string, v []byte) {
			if strings.HasPrefix(key, WardenNamespace) {
				return
			}
			if k > 0 {
				meta = append(meta, ',')
			}
			k++
			meta = appendString(meta, key)
			meta = append(meta, ':')
			meta = append(meta, v...)
		})
		if k > 0 {
			add(name, append(meta, '}'))
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
