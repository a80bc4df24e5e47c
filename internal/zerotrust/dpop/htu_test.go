package dpop

import (
	"testing"
)

func TestHTUNormalization(t *testing.T) {
	for _, tc := range []struct {
		htu, request string
		match        bool
	}{
		{"https://gw.example.com/mcp", "https://gw.example.com/mcp?session=1#frag", true},
		{"https://gw.example.com/mcp?x=1", "https://gw.example.com/mcp", true},
		{"HTTPS://GW.Example.COM/mcp", "https://gw.example.com/mcp", true},
		{"https://gw.example.com:443/mcp", "https://gw.example.com/mcp", true},
		{"http://gw.example.com:80/mcp", "http://gw.example.com/mcp", true},
		{"https://gw.example.com:/mcp", "https://gw.example.com/mcp", true},
		{"https://gw.example.com", "https://gw.example.com/", true},
		{"https://gw.example.com/%7euser/a%2fb", "https://gw.example.com/~user/a%2Fb", true},
		{"https://gw.example.com/a/./b/../mcp", "https://gw.example.com/a/mcp", true},
		{"https://[2001:DB8::1]:443/mcp", "https://[2001:db8::1]/mcp", true},
		{"https://gw.example.com:8443/mcp", "https://gw.example.com/mcp", false},
		{"http://gw.example.com:443/mcp", "https://gw.example.com/mcp", false},
		{"https://gw.example.com/MCP", "https://gw.example.com/mcp", false},
		{"https://gw.example.com/a%2Fb", "https://gw.example.com/a/b", false},
		{"https://gw.example.com/mcp/", "https://gw.example.com/mcp", false},
		{"https://gw.example.com.evil.test/mcp", "https://gw.example.com/mcp", false},
		{"ftp://gw.example.com/mcp", "ftp://gw.example.com/mcp", false},
		{"https:gw.example.com/mcp", "https://gw.example.com/mcp", false},
	} {
		raw := []byte(`"` + tc.htu + `"`)
		err := checkHTU(raw, mustURL(t, tc.request))
		if (err == nil) != tc.match {
			t.Errorf("htu %q vs request %q: match=%v (%v), want %v", tc.htu, tc.request, err == nil, err, tc.match)
		}
	}
}

func TestRemoveDotSegments(t *testing.T) {
	// RFC 3986 §5.2.4 examples and edges.
	for in, want := range map[string]string{
		"/a/b/c/./../../g":   "/a/g",
		"mid/content=5/../6": "mid/6",
		"/../a":              "/a",
		"/a/..":              "/",
		"/a/.":               "/a/",
		"":                   "",
		"/":                  "/",
		"//a":                "//a",
	} {
		if got := removeDotSegments(in); got != want {
			t.Errorf("removeDotSegments(%q) = %q, want %q", in, got, want)
		}
	}
}
