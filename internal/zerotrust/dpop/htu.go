package dpop

import (
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
)

// checkHTU compares the htu claim with the request URL after normalizing
// both (RFC 9449 §4.3 step 9).
func checkHTU(raw json.RawMessage, reqURL *url.URL) *Error {
	htu, ok := jsonString(raw)
	if raw == nil || !ok {
		return refuse(RuleHTU, "htu must be a string")
	}
	claimed, err := url.Parse(htu)
	if err != nil {
		return refuse(RuleHTU, "htu %s is not a URL", quote(raw))
	}
	if claimed.User != nil {
		return refuse(RuleHTU, "htu must not carry userinfo")
	}
	got, err := normalizeURL(claimed)
	if err != nil {
		return refuse(RuleHTU, "htu %s: %v", quote(raw), err)
	}
	if reqURL == nil {
		return refuse(RuleHTU, "request URL is unknown")
	}
	want, err := normalizeURL(reqURL)
	if err != nil {
		return refuse(RuleHTU, "request URL: %v", err)
	}
	if got != want {
		return refuse(RuleHTU, "htu %s does not match request %q", quote(raw), want)
	}
	return nil
}

// normalizeURL renders scheme://host[:port]/path of an absolute http(s) URL,
// dropping query, fragment and userinfo, after the normalizations of RFC 3986:
// scheme and host lowercased (§6.2.2.1), percent-encodings uppercased and
// unreserved characters decoded (§6.2.2.1-2), dot segments removed
// (§6.2.2.3), default ports and an empty path replaced (§6.2.3).
func normalizeURL(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", errors.New("not an absolute http or https URL")
	}
	if u.Opaque != "" {
		return "", errors.New("opaque URL")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("no host")
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if port != "" {
		authority = net.JoinHostPort(host, port)
	}
	path := removeDotSegments(normalizePercent(u.EscapedPath()))
	if path == "" {
		path = "/"
	}
	return scheme + "://" + authority + path, nil
}

// normalizePercent uppercases the hex digits of percent-encodings and
// decodes those that encode unreserved characters (RFC 3986 §2.3).
func normalizePercent(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		hi, ok1 := unhex(p[i+1])
		lo, ok2 := unhex(p[i+2])
		if !ok1 || !ok2 {
			b.WriteByte(p[i])
			continue
		}
		c := hi<<4 | lo
		if unreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[hi])
			b.WriteByte(hex[lo])
		}
		i += 2
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments is RFC 3986 §5.2.4.
func removeDotSegments(in string) string {
	out := make([]byte, 0, len(in))
	dropLast := func() {
		if i := strings.LastIndexByte(string(out), '/'); i >= 0 {
			out = out[:i]
		} else {
			out = out[:0]
		}
	}
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			dropLast()
		case in == "/..":
			in = "/"
			dropLast()
		case in == "." || in == "..":
			in = ""
		default:
			start := 0
			if in[0] == '/' {
				start = 1
			}
			end := strings.IndexByte(in[start:], '/')
			if end < 0 {
				end = len(in)
			} else {
				end += start
			}
			out = append(out, in[:end]...)
			in = in[end:]
		}
	}
	return string(out)
}
