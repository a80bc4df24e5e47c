package main

// The floors: the least a relay can do, run as processes of their own so
// that warden's gateway process is compared with them CPU for CPU. The bench
// binary runs one when started with -floor (floors.go starts it with its own
// executable):
//
//	-floor http -listen 127.0.0.1:P -upstream URL
//	    httputil.ReverseProxy to URL: no parsing, no checks, no records.
//	-floor stdio -- CMD ARGS...
//	    starts CMD and copies bytes both ways with read(2) and write(2),
//	    one chunk at a time; no framing, no parsing.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sync"
)

// runFloor serves one floor and returns the process's exit code.
func runFloor(kind, listenAddr, upstream string, args []string) int {
	var err error
	switch kind {
	case "http":
		err = floorHTTP(listenAddr, upstream)
	case "stdio":
		err = floorStdio(args)
	default:
		err = fmt.Errorf("unknown floor %q (want http or stdio)", kind)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor %s: %v\n", kind, err)
		return 1
	}
	return 0
}

// floorHTTP forwards every request on listenAddr (loopback only) to
// upstream with the standard library's reverse proxy, keeping upstream
// connections alive as warden does.
func floorHTTP(listenAddr, upstream string) error {
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %s: not a loopback address", listenAddr)
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64}
	proxy.FlushInterval = -1 // SSE answers go out as they come
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return err
	}
	return http.Serve(ln, proxy)
}

// floorStdio runs args[0] with args[1:] and relays this process's stdin to
// its stdin and its stdout to this process's stdout until both ends close.
func floorStdio(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command after --")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pipeBytes(in, os.Stdin)
		in.Close() // the client hung up: so does the server's stdin
	}()
	pipeBytes(os.Stdout, out)
	wg.Wait()
	return cmd.Wait()
}

// pipeBytes copies with one read and one write per chunk. The wrappers hide
// *os.File's ReadFrom and WriteTo, so that io.CopyBuffer cannot use splice(2):
// a relay that looks at messages has to read them into memory, and so does
// this floor.
func pipeBytes(dst io.Writer, src io.Reader) {
	buf := make([]byte, 64<<10)
	io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
}
