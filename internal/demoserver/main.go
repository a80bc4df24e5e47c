package demoserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Exit codes of Main, following warden's scheme.
const (
	exitOK      = 0
	exitFailure = 1 // the server could not start or failed while serving
	exitUsage   = 2 // bad flags or arguments
)

// HTTPPath is the path at which Main serves streamable HTTP.
const HTTPPath = "/mcp"

// shutdownGrace bounds how long Main waits for open HTTP requests when its
// context is cancelled.
const shutdownGrace = 5 * time.Second

// Main runs the demo server for `warden demo-server` and returns an exit
// code. args are the flags, without the program name:
//
//	--root DIR     sandbox directory for the file tools (default: none, and
//	               the file tools refuse every call)
//	--http ADDR    serve streamable HTTP on ADDR, which must be a loopback
//	               address such as 127.0.0.1:0; without it, serve stdio
//	--stateless    with --http, serve without sessions
//
// Over stdio the protocol runs on stdin and stdout until stdin ends or ctx
// is cancelled. Over HTTP, Main writes "listening on http://HOST:PORT/mcp"
// as one line to stderr once it accepts connections, and serves until ctx
// is cancelled. Logs go to stderr. get_env reveals this process's
// environment.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("demo-server", flag.ContinueOnError)
	fset.SetOutput(stderr)
	root := fset.String("root", "", "sandbox `directory` for the file tools")
	addr := fset.String("http", "", "serve streamable HTTP on this loopback `address` instead of stdio")
	stateless := fset.Bool("stateless", false, "with --http, serve without sessions")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "demo-server: unexpected argument %q\n", fset.Arg(0))
		return exitUsage
	}
	if *stateless && *addr == "" {
		fmt.Fprintln(stderr, "demo-server: --stateless needs --http")
		return exitUsage
	}
	if *root != "" {
		if fi, err := os.Stat(*root); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "demo-server: --root %s is not a directory\n", *root)
			return exitUsage
		}
	}
	if *addr != "" {
		if err := checkLoopback(*addr); err != nil {
			fmt.Fprintf(stderr, "demo-server: %v\n", err)
			return exitUsage
		}
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	server := New(Options{Root: *root, Logger: logger})

	var err error
	if *addr == "" {
		err = serveStdio(ctx, server, stdin, stdout)
	} else {
		err = serveHTTP(ctx, server, *addr, *stateless, logger, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo-server: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// checkLoopback refuses addresses other than loopback ones: the demo server
// hands out its environment and a writable directory to anyone who connects.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http %s: refusing a non-loopback address, since get_env leaks this process's secrets; use 127.0.0.1:PORT", addr)
}

// serveStdio serves one session on stdin and stdout. It returns nil when
// the client closes stdin or ctx is cancelled.
func serveStdio(ctx context.Context, server *mcp.Server, stdin io.Reader, stdout io.Writer) error {
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err := server.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	if err == nil || ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nopWriteCloser leaves closing stdout to whoever owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveHTTP serves streamable HTTP at HTTPPath until ctx is cancelled.
func serveHTTP(ctx context.Context, server *mcp.Server, addr string, stateless bool, logger *slog.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless, Logger: logger},
	)
	// The SDK already refuses DNS rebinding; also refuse requests that a
	// web page in a browser sends across origins, which could otherwise
	// call get_env on a loopback server.
	mux.Handle(HTTPPath, http.NewCrossOriginProtection().Handler(mcpHandler))
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "listening on http://%s%s\n", ln.Addr(), HTTPPath)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
