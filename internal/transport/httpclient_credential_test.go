package transport

import (
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// TestHTTPClientCredential: HTTPClientOptions.Credential goes on every
// request of the conn (POST, the standalone GET, the closing DELETE), asked
// for each one, and replaces a static header of the same name.
func TestHTTPClientCredential(t *testing.T) {
	ts, rec := serveHCSDK(t, false)
	var n atomic.Int64
	c := newHC(t, ts.URL, HTTPClientOptions{
		Header: http.Header{"Authorization": {"Bearer static"}, "X-Api-Key": {"k"}},
		Credential: func() (string, string, error) {
			return "authorization", "Bearer cred-" + strconv.FormatInt(n.Add(1), 10), nil
		},
	})
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "initialize", []byte(hcInitParams)))
	hcResponse(t, c, jsonrpc.IntID(1))
	hcWrite(t, c, jsonrpc.NewNotification("notifications/initialized", []byte(`{}`)))
	hcWrite(t, c, hcCallEcho(2, "hi", ""))
	hcResponse(t, c, jsonrpc.IntID(2))
	hcWaitFor(t, "standalone GET", func() bool { return len(rec.requests(http.MethodGet)) > 0 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		reqs := rec.requests(method)
		if len(reqs) == 0 {
			t.Errorf("no %s request", method)
		}
		for _, r := range reqs {
			got := r.Header.Values("Authorization")
			if len(got) != 1 || got[0] == "Bearer static" || seen[got[0]] {
				t.Errorf("%s Authorization = %q, want one fresh credential", method, got)
			}
			seen[got[0]] = true
			if r.Header.Get("X-Api-Key") != "k" {
				t.Errorf("%s lost the static header", method)
			}
		}
	}
}

// TestHTTPClientCredentialError: a request whose credential cannot be had
// is not sent.
func TestHTTPClientCredentialError(t *testing.T) {
	ts, rec := serveHCSDK(t, false)
	c := newHC(t, ts.URL, HTTPClientOptions{
		Credential: func() (string, string, error) { return "", "", errors.New("no key") },
	})
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "initialize", []byte(hcInitParams)))
	if code, _ := hcErrorDetail(t, hcResponse(t, c, jsonrpc.IntID(1))); code != jsonrpc.CodeUpstreamUnavailable {
		t.Errorf("code = %d, want %d", code, jsonrpc.CodeUpstreamUnavailable)
	}
	if n := len(rec.requests(http.MethodPost)); n != 0 {
		t.Errorf("%d POSTs reached the upstream without a credential", n)
	}
}
