package jsonrpc_test

import (
	"errors"
	"fmt"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

func ExampleDecode() {
	m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}`), jsonrpc.Limits{})
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		fmt.Println(m == nil, e.Code, e.Message)
		fmt.Printf("%s\n", e.Data)
	}
	// Output:
	// true -32700 duplicate key "a" at $.params.arguments (offset 86)
	// {"stage":"wire","rule":"duplicate-key","offset":86,"path":"$.params.arguments"}
}

func ExampleLookup() {
	m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"get_weather","arguments":{"city":"Paris"}}}`), jsonrpc.Limits{})
	if err != nil {
		panic(err)
	}
	raw, _ := jsonrpc.Lookup(m.Params, "name")
	name, _ := jsonrpc.String(raw)
	city, _ := jsonrpc.Lookup(m.Params, "arguments", "city")
	fmt.Println(m.Method, name, string(city))
	// Output:
	// tools/call get_weather "Paris"
}

func ExamplePeekID() {
	data := []byte(`{"jsonrpc":"2.0","id":7,"Method":"tools/call"}`)
	if _, err := jsonrpc.Decode(data, jsonrpc.Limits{}); err != nil {
		// The message is refused, but the reply can still carry its id.
		fmt.Println(jsonrpc.PeekID(data))
	}
	// Output:
	// 7
}
