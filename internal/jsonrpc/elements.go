package jsonrpc

// Elements calls fn with each element of value, a validated JSON array, in
// order: its raw JSON, without surrounding white space. It returns false,
// without calling fn, when value is not an array. Like Lookup it does not
// validate again and does not allocate: telemetry reads a result's content
// items with it rather than decode the array (Unmarshal) to split it.
func Elements(value []byte, fn func(raw []byte)) bool {
	b := trimSpace(value)
	if len(b) == 0 || b[0] != '[' {
		return false
	}
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		end := skipValue(b, i)
		if end <= i {
			return true
		}
		fn(b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return true
}
