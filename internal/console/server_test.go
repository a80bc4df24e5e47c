package console_test

// Serving a console on loopback for the tests that drive it as a browser
// would (oidc_test.go; with the integration tag, browser_safety_test.go).

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/console"
)

const safetyToken = "browser-test-admin-token-0123456789"

// consoleServer serves a console for q on addr ("127.0.0.1:0" for any
// port) and returns its base URL; stop closes it and every connection.
func consoleServer(t *testing.T, q *approval.Queue, addr string, opts console.Options) (base string, stop func()) {
	t.Helper()
	return consoleServerAt(t, q, addr, func(string) console.Options { return opts })
}

// consoleServerWith is consoleServer on any port, with options that depend
// on the console's base URL.
func consoleServerWith(t *testing.T, q *approval.Queue, opts func(base string) console.Options) (base string, stop func()) {
	t.Helper()
	return consoleServerAt(t, q, "127.0.0.1:0", opts)
}

func consoleServerAt(t *testing.T, q *approval.Queue, addr string, optsFor func(base string) console.Options) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	opts := optsFor("http://" + ln.Addr().String())
	opts.Queue, opts.Token = q, safetyToken
	con, err := console.New(opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console", con)
	mux.Handle("/console/", con)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("console server: %v", err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			<-done
		}
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}
